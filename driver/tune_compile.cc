// TuneCompiler: the pipeline run in three stages, the first two cached.
#include "driver/tune_compile.h"

#include <algorithm>

#include "driver/compile.h"
#include "ir/error.h"
#include "passes/pass_manager.h"

namespace mpk {
namespace {

// Where the graph passes start (the first decompose) and where scheduling starts (the
// first assign-sm after it); the end when there is none.
size_t index_of(const Pipeline& p, const std::string& pass, size_t from = 0) {
  for (size_t i = from; i < p.size(); ++i)
    if (p[i].pass == pass) return i;
  return p.size();
}

Pipeline slice(const Pipeline& p, size_t a, size_t b) {
  return Pipeline(p.begin() + static_cast<std::ptrdiff_t>(a), p.begin() + static_cast<std::ptrdiff_t>(b));
}

void run_passes(Module& m, const Pipeline& entries) {
  if (entries.empty()) return;
  PassManagerConfig config;
  config.verify_each = false;  // the candidates' passes check themselves; finalists are verified
  PassManager(entries, config).run(m);
}

}  // namespace

TuneCompiler::TuneCompiler(Module imported) : imported_(std::move(imported)) {}

const Module& TuneCompiler::stage(std::deque<Cached>& cache, const Module& from, const Pipeline& p,
                                  size_t begin, size_t to, size_t keep) {
  const std::string key = print_pipeline(slice(p, 0, to));
  for (auto it = cache.begin(); it != cache.end(); ++it)
    if (it->key == key) {
      if (it != cache.begin()) {  // most recent first
        Cached c = std::move(*it);
        cache.erase(it);
        cache.push_front(std::move(c));
      }
      return cache.front().module;
    }
  Module m = from;
  for (size_t i = begin; i < to; ++i) {
    run_passes(m, slice(p, i, i + 1));
    if (p[i].pass == "decompose" && task_limit_ > 0 && static_cast<int64_t>(m.graph.tasks.size()) > task_limit_)
      throw Error("decompose made " + std::to_string(m.graph.tasks.size()) + " tasks, more than the " +
                  std::to_string(task_limit_) + " a candidate may have");
  }
  cache.push_front({key, std::move(m)});
  if (cache.size() > keep) cache.pop_back();
  return cache.front().module;
}

Module TuneCompiler::schedule(const Pipeline& p) {
  const size_t graph_from = index_of(p, "decompose");
  const size_t schedule_from = std::max(graph_from, index_of(p, "assign-sm", graph_from));
  if (graph_from == p.size()) {  // no decompose: nothing to share
    Module m = imported_;
    run_passes(m, p);
    return m;
  }
  // Cache keys are the whole prefix, so a graph cached for one program is never reused
  // for another.
  const Module& program = stage(program_, imported_, p, 0, graph_from, 2);
  const Module& graph = stage(graph_, program, p, graph_from, schedule_from, 3);
  Module m = graph;
  run_passes(m, slice(p, schedule_from, p.size()));
  return m;
}

int64_t TuneCompiler::decomposed_tasks(const Pipeline& p) {
  const size_t graph_from = index_of(p, "decompose");
  if (graph_from == p.size()) return 0;
  Module m = stage(program_, imported_, p, 0, graph_from, 2);
  run_passes(m, slice(p, graph_from, graph_from + 1));
  return static_cast<int64_t>(m.graph.tasks.size());
}

Module TuneCompiler::verified(const Pipeline& p) const {
  Module m = imported_;
  run_pipeline(m, print_pipeline(p));
  return m;
}

}  // namespace mpk
