// Stored runs for the statistics, compare and graph tests: a hand-built fork-join graph
// whose numbers are worked out by hand in the tests, under two schedules, and the tiny
// preset through the default pipeline, all simulated and written to a temporary
// trace.db.
#pragma once

#include <string>
#include <vector>

#include "ir/import/import.h"
#include "passes/pass_manager.h"
#include "tests/studio/gpu_like_trace.h"
#include "tests/traces/test_graphs.h"
#include "traces/simulator.h"
#include "traces/trace_db.h"

namespace mpk::testing {

// One step: norm (100 ns) -> {q0 (200 ns), q1 (500 ns)} -> residual (100 ns); the
// residual feeds the next step's norm. `spread`: norm, q0 on worker 0 and q1, residual
// on worker 1 (700 ns a step); otherwise everything on worker 0 (900 ns a step).
inline Module fork_join(bool spread) {
  GraphBuilder g(2);
  OpId norm = g.op("L0.input_norm", OpKind::kRmsNorm, 0);
  OpId q = g.op("L0.q_proj", OpKind::kLinear, 0);
  OpId res = g.op("L0.attn_residual", OpKind::kResidualAdd, 0);
  TaskId n = g.task(norm, 100, TaskKind::kRmsNorm);
  TaskId q0 = g.task(q, 200), q1 = g.task(q, 500);
  TaskId r = g.task(res, 100, TaskKind::kResidualAdd);
  g.event({n}, {q0, q1});
  g.event({q0, q1}, {r});
  g.event({r}, {n}, 1);
  if (spread) return g.schedule({{n, q0}, {q1, r}}, "spread");
  return g.schedule({{n, q0, q1, r}, {}}, "serial");
}

inline int64_t store_run(const std::string& path, const Module& m, const CostParams& c,
                         int32_t steps, const std::string& model) {
  RunInfo info;
  info.kind = "sim";
  info.model = model;
  return write_run(path, m, info, simulate(m, c, steps));
}

// The tiny preset, decomposed, with dependencies, scheduled by `policy`.
inline Module tiny_scheduled(const std::string& policy = "critical-path") {
  Module m = import_model("tiny", ImportOptions{});
  PassManager pm(parse_pipeline("decompose,infer-deps,assign-sm{policy=" + policy + "}"));
  pm.run(m);
  return m;
}

inline int64_t store_tiny(const std::string& path, int32_t steps,
                          const std::string& policy = "critical-path") {
  const Module m = tiny_scheduled(policy);
  return store_run(path, m, CostParams::from_machine(m.machine), steps, "tiny");
}

// The tiny preset on `workers` workers, simulated, then shaped like a GPU trace (linear
// groups recorded member by member, workers on other SMs: tests/studio/gpu_like_trace.h).
inline int64_t store_gpu_like_tiny(const std::string& path, int32_t steps, int32_t workers) {
  const Module m = tiny_scheduled("critical-path,workers=" + std::to_string(workers));
  RunInfo info;
  info.kind = "gpu";
  info.model = "tiny (GPU-like)";
  return write_run(path, m, info, gpu_like(m, simulate(m, CostParams::from_machine(m.machine), steps), workers));
}

}  // namespace mpk::testing
