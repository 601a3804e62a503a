// The timeline's geometry without ImGui: the time axis (ns <-> pixels, zoom at a point,
// pan, fit), the ruler's ticks in nice units, the rows (workers in collapsible groups, then
// one group per other rank of a tensor-parallel launch) and, per row, the boxes to draw.
// Tasks narrower than a few pixels merge into one counted box per run of small tasks,
// found by binary search, so a row costs O(boxes on screen * log n) whatever the trace's
// size; merged boxes are filled with how busy each slice of pixels was, so idle time shows
// at every zoom. Bubbles come from a per-worker level of detail: at a zoom where a pixel
// covers P ns only bubbles of at least ~P ns are visited.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "studio/model/state.h"
#include "studio/model/trace_model.h"

namespace mpk::studio {

// Maps [t0, t0 + width * ns_per_px] to [x0, x0 + width].
struct TimeAxis {
  double t0_ns = 0;
  double ns_per_px = 1;
  float x0 = 0;
  float width = 1;

  TimeAxis() = default;
  TimeAxis(const TimeWindow& w, float x0, float width);
  double x_of(double t_ns) const { return x0 + (t_ns - t0_ns) / ns_per_px; }
  double t_of(double x) const { return t0_ns + (x - x0) * ns_per_px; }
  double t1_ns() const { return t0_ns + width * ns_per_px; }
};
// The axis on which times `shift_ns` earlier are drawn where they are on `a`: another
// rank's row (OtherRank::shift_ns) is laid out on it.
TimeAxis shifted_axis(TimeAxis a, double shift_ns);

// Window operations. The smallest span is 100 ns; the largest is 4x the run.
// Zooms by `factor` (< 1: in) keeping the time under the cursor where it is.
TimeWindow zoom_at(const TimeWindow& w, double t_cursor, double factor, double run_ns);
TimeWindow pan_by(const TimeWindow& w, double dt_ns, double run_ns);
TimeWindow fit(double run_ns);

// A ruler tick every `step_ns` (1, 2 or 5 times a power of ten) with labels.
struct Tick {
  double t_ns = 0;
  std::string label;  // "1.5 ms", "250 us", "40 ns"; relative to the run's start
};
struct Ruler {
  double step_ns = 1;
  std::vector<Tick> ticks;
  std::vector<double> minor;  // unlabelled ticks between the labelled ones
};
// Ticks at least `min_px` pixels apart across the axis.
Ruler make_ruler(const TimeAxis& axis, float min_px = 90.0f);
// A duration in the unit that suits it: "850 ns", "12.5 us", "3.204 ms", "1.25 s".
std::string format_duration(double ns);

// ---- rows
struct Row {
  enum Kind { kGroupHeader, kWorker } kind = kWorker;
  int32_t group = 0;
  int32_t worker = -1;  // kWorker
  float y = 0;          // top, relative to the top of the rows
  float height = 0;
  int32_t other_rank = -1;  // index into StudioState::other_ranks; -1: the opened run's row
};
// Group headers and, for groups not collapsed, one row per worker.
std::vector<Row> layout_rows(int32_t num_workers, int32_t group_size,
                             const std::vector<bool>& collapsed, float row_height,
                             float header_height);
// Appends below `rows` one group per other rank: its header (group first_group + k) and,
// unless collapsed[first_group + k], a row per worker of that rank.
void append_rank_rows(std::vector<Row>& rows, const std::vector<OtherRank>& ranks, int32_t first_group,
                      const std::vector<bool>& collapsed, float row_height, float header_height);
// The row at y (relative to the top of the rows); -1 when none.
int32_t row_at(const std::vector<Row>& rows, float y);

// ---- boxes of one worker row
struct TaskBox {
  float x0 = 0, x1 = 0;
  int64_t exec = -1;     // the first execution of the box
  int64_t count = 1;     // executions in it (a linear group's members each count)
  bool merged = false;   // small tasks merged (else one execution, or one linear group)
  OpKind kind = OpKind::kLinear;  // the first execution's kind
  int64_t t0_ns = 0, t1_ns = 0;   // the first start and the latest end
};
// Boxes of `worker` across the axis; tasks narrower than `min_px` join one box with
// their neighbours that start within `min_px` of the previous end. A linear group's
// members are one box.
void layout_tasks(const TraceModel& m, int32_t worker, const TimeAxis& axis, float min_px,
                  std::vector<TaskBox>& out);

// The fill of a merged box, on a grid of `slice_px` pixels aligned to the axis: per
// slice, how busy the worker was (the union of its executions over the slice's time),
// the execution shown (running at the slice's middle, or the next to start in it: its
// kind colours the busy part) and the idle cause with the most time in the slice. A
// slice that spans 8 cells of the model's coarse picture (TraceModel::picture) or more
// is summed from the cells; a finer one exactly, by galloping searches: O(slices * log
// distance) at worst. Either way the busy time of a span adds up to the truth within a
// cell at each end, whatever the zoom. Neighbouring slices alike merge.
struct KindSlice {
  float x0 = 0, x1 = 0;
  OpKind kind = OpKind::kLinear;
  float busy = 1;      // busy fraction in [0, 1]
  int cause = -1;      // BubbleCause of most of the idle part; -1 none
  int64_t exec = -1;   // the execution shown
};
void merged_slices(const TraceModel& m, const TaskBox& box, const TimeAxis& axis, float slice_px,
                   std::vector<KindSlice>& out);
// The busy fraction of a merged box's whole span (its hover says it).
double box_busy_fraction(const TraceModel& m, const TaskBox& box);

struct BubbleBox {
  float x0 = 0, x1 = 0;
  int64_t index = -1;  // into m.bubbles(worker)
};
// Bubbles of `worker` at least about `min_px` wide (TraceModel::wide_bubbles).
void layout_bubbles(const TraceModel& m, int32_t worker, const TimeAxis& axis, float min_px,
                    std::vector<BubbleBox>& out);

}  // namespace mpk::studio
