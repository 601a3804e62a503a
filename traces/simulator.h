// A discrete-event simulation of a scheduled task graph with the runtime's semantics
// (docs/ir.md, docs/simulator.md): each worker runs its list in order every step; a
// task waits until each of its events' counters reaches target * (k + 1 - distance),
// seeing a release only event_latency_ns after it happened; a task's bytes stream at a
// rate shared by all busy SMs. A module sharded over tensor-parallel ranks is simulated as
// one rank (every rank runs the same schedule at the same times): an all_ranks event is
// seen link_latency_ns later, and an all_reduce reads its peers' partials at
// link_bandwidth. Task costs and the sharing rule are the cost model's
// (ir/cost_params.h), which the policies plan with too. Produces the executions a GPU
// trace would record.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/module.h"
#include "ir/cost_params.h"
#include "traces/trace_db.h"

namespace mpk {

// Throws mpk::Error for a module without a schedule, cost parameters out of bounds
// (check_cost_params), steps outside 0..kMaxSteps, a run that would last longer than
// kMaxTraceNs, or naming the worker, task and event when the schedule deadlocks.
std::vector<Execution> simulate(const Module& scheduled, const CostParams& costs,
                                int64_t steps);

}  // namespace mpk
