// Fuzz target: the verifier's soundness on schedules. The program is fixed (a two-layer model
// small enough to run in microseconds, compiled by one of three pipelines); the input is a list
// of edits to its task graph: regions, events, worker lists, task attrs, kinds and operators.
// An edited module the verifier refuses is fine. One it accepts must run on the CPU executor,
// in a seeded random order with the race checker and in schedule order, and give exactly the
// tokens and logits of the unedited module. Anything else (an executor error, other tokens,
// a deadlock) is a verifier hole, reported by abort().
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "ir/error.h"
#include "ir/import/import.h"
#include "ir/verifier.h"
#include "passes/pass_manager.h"
#include "passes/pipeline.h"
#include "runtime/cpu/executor.h"
#include "runtime/weights/weights.h"

namespace {

constexpr int64_t kSteps = 2;  // with a one-token prompt: step 1 reads what step 0 left

struct Base {
  mpk::Module module;
  mpk::Weights weights;
  mpk::CpuRunResult expected;
};

mpk::Module compile(const std::string& architecture, const std::string& pipeline) {
  mpk::ModelConfig c = *mpk::find_preset("tiny");
  c.architecture = architecture;
  c.hidden = 64;
  c.num_q_heads = 2;
  c.num_kv_heads = 1;
  c.head_dim = 32;
  c.intermediate = 64;
  c.vocab = 64;
  mpk::ImportOptions o;
  o.max_seq_len = 8;
  o.machine.sm_count = 4;
  mpk::Module m = mpk::build_module(c, o, "fuzz");
  mpk::PassManager(mpk::parse_pipeline(pipeline), {}).run(m);
  mpk::verify_or_throw(m);
  return m;
}

mpk::CpuRunResult run(const mpk::Module& m, const mpk::Weights& w, mpk::CpuOrder order, uint64_t seed) {
  mpk::CpuRunOptions o;
  o.steps = kSteps;
  o.prompt = {1};
  o.order = order;
  o.seed = seed;
  o.threads = 1;
  o.watchdog_s = 2;
  return mpk::run_cpu(m, w, o);
}

const std::vector<Base>& bases() {
  static const std::vector<Base> b = [] {
    std::vector<Base> out;
    const std::string fusions = mpk::kDefaultFusions;
    for (const auto& [arch, pipeline] : std::vector<std::pair<std::string, std::string>>{
             {"llama", mpk::kDefaultPipeline},
             {"qwen3", fusions + ",decompose{attention-splits=2},infer-deps,assign-sm{policy=round-robin}"},
             {"llama", "fuse-residual,fuse-norm,fuse-swiglu,decompose{coop=on},infer-deps,"
                       "assign-sm{policy=locality}"}}) {
      Base base{compile(arch, pipeline), {}, {}};
      base.weights = mpk::random_weights(base.module, 5);
      base.expected = run(base.module, base.weights, mpk::CpuOrder::kRandom, 0);
      out.push_back(std::move(base));
    }
    return out;
  }();
  return b;
}

// Reads the input a byte at a time; zeros once it is used up.
struct Cursor {
  const uint8_t* p;
  size_t n;
  uint8_t byte() { return n ? (--n, *p++) : 0; }
  size_t pick(size_t count) { return count ? (size_t{byte()} << 8 | byte()) % count : 0; }
  int64_t delta() { return static_cast<int8_t>(byte()); }
};

void sorted_insert(std::vector<mpk::TaskId>& v, mpk::TaskId t) {
  const auto it = std::lower_bound(v.begin(), v.end(), t);
  if (it == v.end() || *it != t) v.insert(it, t);
}

// One edit of the task graph, chosen and parameterised by the input.
void edit(mpk::Module& m, Cursor& in) {
  mpk::TaskGraph& g = m.graph;
  const auto ntasks = static_cast<int32_t>(g.tasks.size());
  mpk::Task& t = g.tasks[in.pick(g.tasks.size())];
  mpk::Event& e = g.events[in.pick(g.events.size())];
  std::vector<mpk::TaskId>& worker = g.schedule.workers[in.pick(g.schedule.workers.size())];
  switch (in.byte() % 12) {
    case 0:
    case 1: {  // move one bound of a read (0) or write (1) region
      std::vector<mpk::Region>& regions = in.byte() % 2 ? t.writes : t.reads;
      if (regions.empty()) return;
      mpk::Region& r = regions[in.pick(regions.size())];
      if (r.dims.empty()) return;
      mpk::Range& d = r.dims[in.pick(r.dims.size())];
      (in.byte() % 2 ? d.lo : d.hi) += in.delta();
      return;
    }
    case 2:  // drop a consumer
      if (!e.consumers.empty()) e.consumers.erase(e.consumers.begin() + in.pick(e.consumers.size()));
      return;
    case 3:  // drop a producer, and (or not) lower the target with it
      if (e.producers.empty()) return;
      e.producers.erase(e.producers.begin() + in.pick(e.producers.size()));
      e.target -= in.byte() % 2;
      return;
    case 4:  // add a consumer
      sorted_insert(e.consumers, static_cast<mpk::TaskId>(in.pick(ntasks)));
      return;
    case 5:  // add a producer, and (or not) raise the target with it
      sorted_insert(e.producers, static_cast<mpk::TaskId>(in.pick(ntasks)));
      e.target += in.byte() % 2;
      return;
    case 6:
      e.step_distance = 1 - e.step_distance;
      return;
    case 7:  // move a task within or between worker lists
    {
      if (worker.empty()) return;
      const size_t from = in.pick(worker.size());
      const mpk::TaskId id = worker[from];
      worker.erase(worker.begin() + from);
      std::vector<mpk::TaskId>& to = g.schedule.workers[in.pick(g.schedule.workers.size())];
      to.insert(to.begin() + in.pick(to.size() + 1), id);
      return;
    }
    case 8:  // swap the writes of two tasks
      std::swap(t.writes, g.tasks[in.pick(g.tasks.size())].writes);
      return;
    case 9: {  // change an integer attr of the task
      std::vector<int64_t*> ints;
      for (auto& [key, value] : t.attrs)
        if (auto* v = std::get_if<int64_t>(&value)) ints.push_back(v);
      if (!ints.empty()) *ints[in.pick(ints.size())] += in.delta();
      return;
    }
    case 10:  // the task claims another operator
      t.op = static_cast<mpk::OpId>(in.pick(m.program.ops.size()));
      return;
    default:  // the task claims another kind
      t.kind = g.tasks[in.pick(g.tasks.size())].kind;
      return;
  }
}

bool same(const mpk::CpuRunResult& a, const mpk::CpuRunResult& b) {
  return a.tokens == b.tokens && a.top_logits == b.top_logits && a.logits.size() == b.logits.size() &&
         std::memcmp(a.logits.data(), b.logits.data(), a.logits.size() * sizeof(float)) == 0;
}

[[noreturn]] void hole(const char* what, const std::string& detail) {
  std::fprintf(stderr, "verifier hole: an accepted schedule %s: %s\n", what, detail.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Cursor in{data, size};
  const Base& base = bases()[in.byte() % bases().size()];
  const uint64_t seed = in.byte();
  mpk::Module m = base.module;
  for (int edits = 0; in.n > 0 && edits < 16; ++edits) edit(m, in);
  if (!mpk::verify_module(m).empty()) return 0;
  for (const mpk::CpuOrder order : {mpk::CpuOrder::kRandom, mpk::CpuOrder::kSchedule}) {
    mpk::CpuRunResult got;
    try {
      got = run(m, base.weights, order, seed);
    } catch (const mpk::Error& e) {
      hole("fails to run", e.what());
    }
    if (!same(got, base.expected))
      hole("changes the result", order == mpk::CpuOrder::kRandom ? "random order" : "schedule order");
  }
  return 0;
}
