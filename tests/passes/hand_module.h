// Hand-built modules for the pass tests: tasks that read and write chosen column ranges
// of [1, W] tensors, all belonging to one residual_add operator, so that dependency and
// scheduling passes can be checked on small graphs. Their regions are arbitrary, not an
// operator's: the verifier's graph and schedule layers check them (verify_graph,
// verify_schedule), the structure layer refuses them (structure.task-regions).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "ir/error.h"
#include "ir/module.h"
#include "passes/pass.h"
#include "passes/registry.h"

namespace mpk::testing {

class HandModule {
 public:
  explicit HandModule(int32_t sm_count = 4) {
    m.name = "hand";
    m.machine.sm_count = sm_count;
    const TensorId a = tensor("op.a", 64, TensorRole::kInput);
    const TensorId b = tensor("op.b", 64, TensorRole::kInput);
    const TensorId y = tensor("op.y", 64, TensorRole::kOutput);
    m.program.add_op({"add", OpKind::kResidualAdd, {a, b}, {y}, {}, -1});
    m.program.rebuild_use_lists();
  }

  TensorId tensor(const std::string& name, int64_t width = 64,
                  TensorRole role = TensorRole::kActivation) {
    return m.program.add_tensor({name, DType::kBF16, {1, width}, role});
  }

  // Columns [lo, hi) of tensor t.
  static Region cols(TensorId t, int64_t lo, int64_t hi) { return Region{t, {{0, 1}, {lo, hi}}}; }

  TaskId task(std::vector<Region> reads, std::vector<Region> writes, int64_t bytes = 4096) {
    Task t;
    t.op = 0;
    t.kind = TaskKind::kResidualAdd;
    t.reads = std::move(reads);
    t.writes = std::move(writes);
    t.bytes = bytes;
    m.graph.tasks.push_back(std::move(t));
    return static_cast<TaskId>(m.graph.tasks.size() - 1);
  }

  Module m;
};

// Runs one registered pass with options; a failure throws mpk::Error with its message.
inline bool run_pass(Module& m, const std::string& name, const PassOptions& options = {}) {
  const PassInfo* info = find_pass(name);
  if (!info) throw Error("no pass " + name);
  PassResult r = info->create(options)->run(m);
  if (r.error) throw Error(*r.error);
  return r.changed;
}

// The events of m as (producers, consumers, distance) triples, for comparisons.
struct EventView {
  std::vector<TaskId> producers, consumers;
  int32_t distance;
  bool operator==(const EventView&) const = default;
};

inline void PrintTo(const EventView& e, std::ostream* os) {
  auto list = [&](const std::vector<TaskId>& v) {
    *os << "(";
    for (size_t i = 0; i < v.size(); ++i) *os << (i ? "," : "") << v[i];
    *os << ")";
  };
  list(e.producers);
  *os << "->";
  list(e.consumers);
  *os << " d" << e.distance;
}

inline std::vector<EventView> events_of(const Module& m, int32_t distance) {
  std::vector<EventView> out;
  for (const Event& e : m.graph.events)
    if (e.step_distance == distance) out.push_back({e.producers, e.consumers, distance});
  return out;
}

// reach[i][j]: j is reachable from i through distance-0 events (i itself included).
// Distance-0 events go from lower to higher task ids; an edge that does not is ignored
// (callers check the order themselves).
inline std::vector<std::vector<char>> same_step_reach(const Module& m) {
  const size_t n = m.graph.tasks.size();
  std::vector<std::vector<TaskId>> succ(n);
  for (const Event& e : m.graph.events)
    if (e.step_distance == 0)
      for (TaskId p : e.producers) succ[p].insert(succ[p].end(), e.consumers.begin(), e.consumers.end());
  std::vector<std::vector<char>> reach(n, std::vector<char>(n, 0));
  for (size_t i = n; i-- > 0;) {
    reach[i][i] = 1;
    for (TaskId s : succ[i])
      if (s > static_cast<TaskId>(i))
        for (size_t j = 0; j < n; ++j) reach[i][j] |= reach[s][j];
  }
  return reach;
}

}  // namespace mpk::testing
