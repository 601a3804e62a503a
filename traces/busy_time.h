// Busy time as a union of intervals, never a sum: the megakernel runs a linear group
// (q/k/v, gate/up) as one unit and the trace records every member with the same start and
// end on one worker, so summing executions counts that time once per member. Used by
// `mpk trace stats` and every studio view that shows busy time or utilization.
#pragma once

#include <cstdint>
#include <vector>

#include "traces/trace_db.h"

namespace mpk {

// The union of [start, end) of `execs` on each worker, summed over workers.
int64_t busy_union_ns(const std::vector<Execution>& execs);

// busy_union_ns of each step's executions, for steps 0 .. num_steps - 1 (executions of
// other steps are ignored).
std::vector<int64_t> busy_union_per_step(const std::vector<Execution>& execs, int32_t num_steps);

// For executions ordered by (worker, start): p[0] = 0 and p[i + 1] - p[i] is the time
// execution i adds to the union of executions 0..i of its worker, so the busy time of a
// run of consecutive executions [a, b) of one worker is p[b] - p[a] (exact when a is the
// first execution of its worker or starts after every earlier one ended).
std::vector<int64_t> busy_union_prefix(const std::vector<Execution>& ordered);

}  // namespace mpk
