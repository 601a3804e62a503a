// "Why was this SM idle?": from a selected execution, walk back what let each task
// start last — the producer execution that finished last among its waited events
// (BlameIndex semantics, traces/run_derive.h), or the task before it on its worker when
// that one ended later — until the walk leaves the execution's step. The chain is the
// critical path into the task: the walk of traces/critical_path.h that `mpk trace stats
// --path` runs from a step's last task, which never visits a task twice.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "studio/model/timeline_layout.h"
#include "studio/model/trace_model.h"

namespace mpk::studio {

struct WhyIdleLink {
  enum Via { kStepStart, kEvent, kWorker };
  int64_t exec = -1;
  Via via = kStepStart;   // how this task waited for the link before it
  EventId event = -1;     // kEvent: the event released last
  int64_t gap_ns = 0;     // from the previous link's end (or the step's start) to this start
};

struct WhyIdle {
  std::vector<WhyIdleLink> chain;  // oldest first; the last link is the selected execution
  int64_t busy_ns = 0;             // execution time along the chain
  int64_t gap_ns = 0;              // waiting and latency along the chain
};

WhyIdle why_idle(const TraceModel& m, int64_t exec);

// Tooltip texts, several lines each. A task execution: for a linear group's member, the
// group's members first; id, operator, kinds, layer, step, worker, wait/start/end and
// duration. A bubble: its cause and length and, for a wait,
// the event, the producer task, its worker and when it finished. Points in time are said
// `shift_ns` later than the model's (another rank's row on the opened run's axis,
// other_ranks.h).
std::string explain_execution(const TraceModel& m, int64_t exec, int64_t shift_ns = 0);
std::string explain_bubble(const TraceModel& m, const Bubble& b, int64_t shift_ns = 0);
// A merged box: its tasks, worker and span, how busy it was and its idle time by cause.
std::string explain_merged(const TraceModel& m, const TaskBox& box, int64_t shift_ns = 0);

// One line for the list: "L3.q_proj [task 812] on SM 17, ran 12.40 us, waited
// 1.000 us for event 40".
std::string describe(const TraceModel& m, const WhyIdleLink& link);

}  // namespace mpk::studio
