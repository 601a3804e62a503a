// The property one time axis for a tensor-parallel launch must have (traces/rank_clocks.h,
// docs/trace-schema.md "Ranks"): a task that waits on an all_ranks event starts after every
// rank's producers of it end. Shared by the CPU, GPU and recorded-trace tests of ranks.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <tuple>
#include <vector>

#include "ir/module.h"
#include "traces/trace_db.h"

namespace mpk::testing {

// Checks every cross-rank dependency of `execs` (all ranks' executions on one axis, each
// with its rank) and returns how many (consumer, producer) pairs it checked.
inline int64_t check_cross_rank_order(const Module& m, const std::vector<Execution>& execs) {
  std::map<std::tuple<int32_t, TaskId, int32_t>, const Execution*> at;
  int32_t ranks = 0;
  for (const Execution& x : execs) {
    at[{x.rank, x.task, x.step}] = &x;
    ranks = std::max(ranks, x.rank + 1);
  }
  int64_t pairs = 0;
  for (const Event& e : m.graph.events) {
    if (!e.all_ranks) continue;
    for (const Execution& c : execs) {
      if (c.step < e.step_distance || !std::binary_search(e.consumers.begin(), e.consumers.end(), c.task)) continue;
      for (int32_t q = 0; q < ranks; ++q)
        for (TaskId p : e.producers) {
          const auto it = at.find({q, p, c.step - e.step_distance});
          if (it == at.end()) {
            ADD_FAILURE() << "no execution of task " << p << " on rank " << q << " at step " << c.step - e.step_distance;
            continue;
          }
          EXPECT_LE(it->second->end_ns, c.start_ns) << "task " << c.task << " on rank " << c.rank << " at step "
                                                    << c.step << " started before task " << p << " on rank " << q << " ended";
          ++pairs;
        }
    }
  }
  return pairs;
}

}  // namespace mpk::testing
