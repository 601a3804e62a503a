// Runs for the studio core's tests: the fork-join graph of panel_test_runs.h with every
// time known by hand (unit costs: 1 byte/ns, no latency), and the tiny preset.
//
// spread schedule, per step k (t = 700 k): worker 0 runs norm [t, t+100) and q0
// [t+100, t+300); worker 1 runs q1 [t+100, t+600) after waiting for norm, and residual
// [t+600, t+700). Events: 0 norm -> q0, q1; 1 q0, q1 -> residual; 2 residual -> next
// step's norm (distance 1).
#pragma once

#include <string>

#include "tests/studio/panel_test_runs.h"

namespace mpk::testing {

enum ForkJoinTask : TaskId { kNorm = 0, kQ0 = 1, kQ1 = 2, kResidual = 3 };

inline int64_t store_fork_join(const std::string& path, int32_t steps) {
  return store_run(path, fork_join(true), unit_costs(), steps, "fork-join");
}

}  // namespace mpk::testing
