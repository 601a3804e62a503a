// A short summary of a module after a pipeline: sizes of the program and task graph,
// how the schedule spreads tasks over workers, and the cost model's estimates of one
// step (critical path, makespan of the schedule, bytes moved). Printed by the CLIs.
#pragma once

#include <cstdint>
#include <string>

#include "ir/module.h"

namespace mpk {

struct ModuleSummary {
  int64_t operators = 0;
  int64_t tasks = 0;
  int64_t events = 0;
  int64_t cross_step_events = 0;  // step_distance 1
  int64_t workers = 0;            // 0: not scheduled
  std::string policy;
  int64_t tasks_per_worker_min = 0, tasks_per_worker_median = 0, tasks_per_worker_max = 0;
  // Longest chain over same-step events: estimate_task_ns per task (ir/cost_params.h,
  // the machine model's costs) plus its event latency per event; 0 without tasks.
  double critical_path_ns = 0;
  // One step of the schedule in the same model, latency only across workers; 0 when
  // not scheduled.
  double makespan_ns = 0;
  int64_t bytes_per_step = 0;  // sum of task bytes
};

// Throws mpk::Error when the events are cyclic or name missing tasks, the schedule is
// invalid, or the machine model is out of bounds (ir/machine_check.h).
ModuleSummary summarize(const Module& m);

// Aligned "label  value" lines; rows that do not apply yet (no tasks, no schedule)
// are left out.
std::string format_summary(const ModuleSummary& s);

}  // namespace mpk
