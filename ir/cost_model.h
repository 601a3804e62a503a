// A first-order analytic estimate of one task's duration on one SM, from the machine
// model and the task's bytes and flops. Used by scheduling policies and summaries; the
// simulator (traces/) refines it with bandwidth sharing and calibrated parameters.
#pragma once

#include "ir/module.h"

namespace mpk {

// overhead + max(bytes / per-SM bandwidth share, flops / per-SM CUDA-core rate), in ns.
double estimate_task_ns(const Task& t, const MachineModel& m);

}  // namespace mpk
