// Analyses of one stored run: per-step makespan, SM utilization, bubble time by cause,
// the longest waits with the event and producer they waited for, time per operator
// kind, and the critical path of a step walked back from its last task (the walk of
// traces/critical_path.h: each task's predecessor is whichever let it start last, the
// producer whose release it waited for or the task before it on its worker). Shared
// by `mpk trace`, `mpk experiment` and the studio.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "traces/trace_db.h"

namespace mpk {

struct WaitRecord {
  int32_t worker = 0, step = 0;
  TaskId task = -1;
  std::string op;  // the waiting task's operator
  int64_t start_ns = 0, duration_ns = 0;
  EventId event = -1;
  TaskId producer = -1;
  std::string producer_op;
  int32_t producer_worker = -1;
};

struct KindTime {
  std::string kind;  // operator kind
  int64_t executions = 0, total_ns = 0, wait_ns = 0;
};

// Consecutive critical-path nodes of one name (an operator, or the members of a linear
// group: "L3.q_proj+L3.k_proj"), in time order.
struct PathSegment {
  OpId op = -1;           // the (first member's) operator
  std::string name, kind;
  int64_t tasks = 0;      // nodes: a linear group counts once
  int64_t busy_ns = 0;  // execution time of these tasks
  int64_t gap_ns = 0;   // time between the previous segment's end and this one's start
};

struct RunStats {
  RunRecord run;
  std::vector<StepRecord> steps;
  double mean_step_ns = 0;    // mean makespan per step
  double median_step_ns = 0;
  int64_t busy_ns = 0;        // union of execution intervals per worker (traces/busy_time.h)
  double utilization = 0;     // busy / (workers * duration)
  std::array<int64_t, 4> bubble_ns{};  // by BubbleCause
  // The wait time split by its cause: after the producer it waited for had ended (the
  // release reaching the waiter: signalling latency), and the rest (the producer still
  // running, or not in the trace). released + running == bubble_ns[kWait].
  int64_t wait_released_ns = 0;
  int64_t wait_running_ns = 0;
  int64_t waits_released = 0;  // waits that lasted past their producer's end
  std::vector<WaitRecord> longest_waits;  // up to 10, longest first
  std::vector<KindTime> kinds;            // most time first
  int32_t path_step = -1;                 // the step whose critical path is shown
  int64_t path_busy_ns = 0;               // execution time on the path
  int64_t path_gap_ns = 0;                // waits and latency on the path
  int64_t path_tasks = 0;                 // nodes on the path
  std::vector<PathSegment> path;
  std::vector<KindTime> path_kinds;       // busy time on the path by operator kind
};

// `step` -1: the step with the median makespan. Throws mpk::Error for an unknown run or
// a step the run does not have.
RunStats compute_stats(const TraceReader& reader, int64_t run, int64_t step = -1);
// The same for a run in memory (as TraceWriter::write_run hands it back) of `graph` (its
// operators, tasks and events).
RunStats compute_stats(const Module& graph, const StoredRun& run, int64_t step = -1);

// Human-readable reports: short aligned tables.
// "run 3  sim  tiny  critical-path  batch 1  4 steps  4 workers  H100-SXM (model)\n".
std::string format_run_title(const RunRecord& r);
std::string format_stats(const RunStats& s, bool full_path);
// Four lines: makespan per step, utilization, idle time by cause, critical path.
std::string format_brief(const RunStats& s);
std::string format_diff(const RunStats& a, const RunStats& b);

// "1.234 ms", "56.7 us", "890 ns".
std::string format_ns(double ns);

}  // namespace mpk
