// The timeline's navigation without ImGui: search executions by operator or task, step
// through the matches in time; what a picked range holds (duration, tasks, bytes, achieved
// bandwidth); the filters by layer, step and kind; the window that frames the range, the
// why-idle walk or the selection; and a range's executions as CSV.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string_view>
#include <vector>

#include "studio/model/state.h"
#include "studio/model/trace_model.h"

namespace mpk::studio {

// Executions whose operator name contains `query` (ignoring case), or, for "task N" or a
// bare number, the executions of task N; ordered by start (then worker). Empty for none.
std::vector<int64_t> search_executions(const TraceModel& m, std::string_view query);
// The match after (`forward`) or before execution `from` in time order, wrapping round;
// with `from` -1 the first (or last). -1 when there are no matches.
int64_t next_match(const TraceModel& m, const std::vector<int64_t>& matches, int64_t from, bool forward);

struct RangeSummary {
  double duration_ns = 0;
  int64_t tasks = 0;    // executions starting in the range (a linear group's members each)
  double bytes = 0;     // bytes streamed in it: each execution's, spread over its time
  double bytes_per_ns() const { return duration_ns > 0 ? bytes / duration_ns : 0; }  // GB/s
};
RangeSummary summarize_range(const TraceModel& m, double t0, double t1);

// Whether execution `exec` passes `f` (studio/model/state.h); the timeline dims the others.
bool passes(const TraceModel& m, const ViewFilter& f, int64_t exec);

// The window showing [t0, t1) with a margin of 5 % each side.
TimeWindow window_around(double t0, double t1);
// What "zoom to" frames: the picked range, else the shown why-idle walk, else the
// selected execution; nullopt when there is none.
std::optional<TimeWindow> zoom_target(const StudioState& s);

// The executions overlapping [t0, t1), one CSV line each, under a header line:
// task,operator,kind,layer,step,worker,sm,wait_ns,start_ns,end_ns,bytes.
void export_range_csv(const TraceModel& m, double t0, double t1, std::ostream& out);

}  // namespace mpk::studio
