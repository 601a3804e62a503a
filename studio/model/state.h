// StudioState: everything the studio's panels share, as one plain struct — the open
// trace.db, its runs, the current run's TraceModel (and those of the other ranks of its
// tensor-parallel launch), the selection, the visible time window, the compare run, which
// view is shown and a status line. Panels read and write it directly; a panel keeps its
// own UI state in a struct of its own, here or in
// panel_state<T>(), so that frames are reproducible from the state alone (tests drive the
// app headless). Add fields freely; keep them plain data.
//
// The functions below change what is open and keep the state consistent (a new run
// resets the selection and fits the window). They never throw: bad input (a missing
// file, not a trace.db, an empty trace, a newer schema) ends up in `status` with
// status_error set, and the call returns false.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <typeindex>
#include <unordered_map>
#include <vector>

#include "studio/model/other_ranks.h"
#include "studio/model/pipeline_state.h"
#include "studio/model/trace_model.h"
#include "studio/model/view_states.h"
#include "traces/trace_db.h"

namespace mpk::studio {

// A view: the name of a registered panel (studio/model/panel_registry.h).
struct View {
  std::string_view name = "timeline";
  bool operator==(const View&) const = default;
  // Some views by name, for code that switches to one (a new panel needs no entry here).
  static const View kTimeline, kStats, kCompare, kGraph, kPipeline, kWorkers;
};
inline constexpr View View::kTimeline{"timeline"};
inline constexpr View View::kStats{"stats"};
inline constexpr View View::kCompare{"compare"};
inline constexpr View View::kGraph{"graph"};
inline constexpr View View::kPipeline{"pipeline"};
inline constexpr View View::kWorkers{"workers"};
const char* name_of(View v);                        // "timeline", "stats", ...
std::optional<View> parse_view(std::string_view s);  // a registered panel; nullopt for none

// The visible time range of the timeline (and of the compare view, which shares it),
// in ns relative to the run's start.
struct TimeWindow {
  double t0_ns = 0;
  double t1_ns = 1;
  double span() const { return t1_ns - t0_ns; }
};

// What the timeline shows at full colour; it dims the rest (studio/model/navigation.h).
struct ViewFilter {
  int32_t layer = -1;     // -1: every layer
  int32_t step = -1;      // -1: every step
  uint32_t kinds = ~0u;   // bit k: OpKind k
  bool active() const { return layer >= 0 || step >= 0 || kinds != ~0u; }
};

// The timeline panel's own state (studio/panel_timeline.cc). The geometry fields are
// written by the panel each frame so that tests and other panels can find what is
// drawn where.
struct TimelineState {
  const TraceModel* laid_out_for = nullptr;  // the model the fields below were set up for
  int32_t group_size = 16;              // workers per collapsible group
  std::vector<bool> collapsed;          // per group
  float row_height = 0;                 // 0: chosen to fit the rows on the first frame
  int32_t scroll_to_worker = -1;        // a request to bring a worker's row into view
  int32_t scroll_tries = 0;             // frames it has been tried
  bool drag_active = false;
  float drag_start_x = 0;               // mouse x where a drag began
  bool range_drag = false;              // a right-button drag is picking s.range
  double range_anchor_ns = 0;           // where it began
  bool show_legend = true;
  // An Alt+drag moving a task to another row or place (a hand edit, pipeline_state.h):
  // the task and step of the execution grabbed (task -1: none), the mouse's offset from
  // its box's left edge, and where it would land this frame (worker -1: nowhere; after
  // -1: first in the worker's list).
  TaskId move_task = -1;
  int32_t move_step = 0;
  float move_grab_dx = 0;
  int32_t move_worker = -1;
  TaskId move_after = -1;
  bool move_noop = false;               // that place is where the task is now
  // Geometry of the last frame: the screen x of t0 and pixels per ns, and each worker
  // row's top y (negative when the row is not visible).
  // canvas_y0 is the rows' content origin (it moves with the scroll), view_y0 the top
  // of the visible rows, canvas_height their visible height.
  float canvas_x0 = 0, canvas_width = 0, canvas_y0 = 0, canvas_height = 0, view_y0 = 0;
  std::vector<float> row_y;
  std::vector<std::vector<float>> rank_row_y;  // the same for each of s.other_ranks
  // What the mouse is over in the last frame (-1 / empty when nothing).
  int64_t hovered_exec = -1;
  int32_t hovered_rank = -1;            // the other rank (index into s.other_ranks) whose row it is over
  int32_t hovered_bubble_worker = -1;
  int64_t hovered_bubble = -1;          // index into model->bubbles(worker)
  std::string hover_text;               // the tooltip shown, as plain text
  int64_t boxes_drawn = 0;              // task boxes drawn (merged boxes count once)
  int64_t merged_boxes = 0;
  float why_button_x = 0, why_button_y = 0;  // centre of the toolbar's "Why idle?" button
  // Navigation (studio/ui/timeline_nav.cc): the search and its matches (for `searched`, in
  // the model they were found in), the filter, the edit mode (a plain drag moves tasks).
  std::string search;
  std::string searched;
  const TraceModel* search_model = nullptr;
  std::vector<int64_t> matches;
  ViewFilter filter;
  bool edit_mode = false;
  // The busy-SM strip (studio/model/lanes.h) of `strip_for`, one value a pixel; a drag on it.
  std::vector<float> strip;
  const TraceModel* strip_for = nullptr;
  bool strip_drag = false;
  float strip_x0 = 0, strip_x1 = 0, strip_y = 0;  // where it was drawn, last frame
  // The bandwidth lane of `lane_for` at the axis `lane_key` (t0, ns a pixel, columns).
  std::vector<float> lane;
  const TraceModel* lane_for = nullptr;
  std::array<double, 3> lane_key{};
  // The range readout (duration, tasks, bytes, bandwidth) and what it was computed for.
  std::string readout;
  std::optional<TimeWindow> readout_for;
  const TraceModel* readout_model = nullptr;
  // The details pane's list of the selected linear group's members: where each line is.
  float member_x = 0;
  std::vector<float> member_y;
};

struct Selection {
  int64_t exec = -1;                    // index into model->executions(); -1: none
  bool show_why_idle = false;           // the walk is highlighted and listed
  std::vector<int64_t> why_idle;        // the walk from `exec` (why_idle.h), oldest first
};

struct StudioState {
  // What the user opened: a trace.db, or a .mpk simulated into `trace_path` (a
  // temporary file removed when the state goes away).
  std::string input_path;
  std::string trace_path;
  bool trace_is_temporary = false;
  // New runs (Apply, stored hand edits) go to a side file beside the opened one,
  // NAME.studio.db, a copy of the open trace made when the first run is stored
  // (studio/model/store_target.h); then trace_path is that file and trace_is_side is set. With
  // write_into_input they go into the opened trace.db itself.
  bool trace_is_side = false;
  bool write_into_input = false;
  std::unique_ptr<TraceReader> reader;
  std::vector<RunRecord> runs;
  std::vector<float> run_row_y;         // screen y of each run's row in the run list, last frame

  // The current run, and the other ranks of its launch when it is a tensor-parallel
  // one (other_ranks.h; empty when it is not, or when the launch's rows are damaged).
  int64_t run = -1;
  std::unique_ptr<TraceModel> model;
  std::vector<OtherRank> other_ranks;
  int64_t compare_run = -1;             // -1: none chosen
  // The compare view shows the current run as A and compare_run as B, unless this is
  // set (by Apply and stored hand edits: the old run is A, the new one, current, B).
  bool compare_current_is_b = false;

  View view = View::kTimeline;
  bool view_changed = true;             // set when `view` is changed programmatically
  Selection selection;
  TimeWindow window;
  int hovered_kind = -1;                // OpKind under the mouse (highlight); -1 none

  std::string status;                   // a message at the bottom of the window (wrapped)
  bool status_error = false;
  float status_height = 0;              // its height in the last frame
  bool show_frame_time = false;         // frame-time overlay in a corner
  double frame_cpu_ms = 0;              // CPU time of the last app frame
  bool quit_requested = false;

  TimelineState timeline;

  // A time range picked on the timeline, [t0, t1) in ns: the statistics view covers only
  // it. Unset: the whole run.
  std::optional<TimeWindow> range;
  // Tasks of the current run's graph to outline on the timeline, sorted; the graph view
  // sets them from its selected node. A new graph clears them.
  std::vector<TaskId> highlighted_tasks;
  // Background jobs of the views still running (graph layouts, pipeline jobs), counted
  // by each frame; --screenshot renders frames until there are none.
  int32_t background_jobs = 0;
  StatsViewState stats;
  CompareViewState compare;
  GraphViewState graph;
  PipelineViewState pipeline;  // the pipeline view (studio/model/pipeline_state.h)
  // Other panels' own state: one value of each type, made on first use (panel_state<T>).
  std::unordered_map<std::type_index, std::shared_ptr<void>> panel_states;

  StudioState();
  ~StudioState();  // removes a temporary trace
  StudioState(const StudioState&) = delete;
  StudioState& operator=(const StudioState&) = delete;
};

// A panel's own state in `s`, default-constructed on first use.
template <typename T>
T& panel_state(StudioState& s) {
  std::shared_ptr<void>& p = s.panel_states[std::type_index(typeid(T))];
  if (!p) p = std::make_shared<T>();
  return *static_cast<T*>(p.get());
}

void set_status(StudioState& s, std::string message, bool error = false);

// Opens `path`: a trace.db, or a scheduled task graph (.mpk, binary or text form) that
// is simulated (8 steps, the machine model's costs) into a temporary trace.db. Selects
// `run` (-1: the last run). Returns false and sets the status on bad input.
bool open_input(StudioState& s, const std::string& path, int64_t run = -1,
                int32_t sim_steps = 8);
// Opens a trace.db only.
bool open_trace(StudioState& s, const std::string& path, int64_t run = -1);
// Makes `run` the current run: loads its TraceModel and the other ranks of its launch,
// clears the selection; keeps the window when another run was shown and the window still
// overlaps the new one (switching runs, and every hand edit, keep the zoom; another rank of
// the same launch keeps the same moments in view), else fits the run. Returns false (the
// previous run stays) for an unknown run. When the launch's other ranks cannot be loaded,
// the run opens alone and the status says why.
bool select_run(StudioState& s, int64_t run);
// Re-reads the run list of the open trace (after a run was appended to it).
void refresh_runs(StudioState& s);
// The record of run `id` among s.runs; nullptr when absent.
const RunRecord* find_run(const StudioState& s, int64_t id);

// The time the current run and its other ranks span on its axis: [0, its duration] for a
// single-rank run.
TimeWindow launch_extent(const StudioState& s);
// Sets the window to the whole run, every rank of it (with a small margin).
void fit_window(StudioState& s);
// Selects execution `exec` (-1: none) and drops a why-idle walk of another execution.
void select_execution(StudioState& s, int64_t exec);
// Brings execution `exec` into view, keeping the zoom: centres the window on it and
// scrolls the timeline's rows to its worker (expanding its group).
void show_execution(StudioState& s, int64_t exec);

}  // namespace mpk::studio
