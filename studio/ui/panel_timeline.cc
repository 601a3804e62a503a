// The timeline: one row per worker (SM) in collapsible groups, tasks coloured by
// operator kind (small ones merged into counted boxes), bubbles hatched by cause, step
// boundaries, a ruler; wheel zooms at the cursor, drag pans, keys move; hover explains,
// click selects (arrows to producers and consumers), "Why idle?" walks back the
// critical path; Alt+drag (and Alt+arrows) move a task, a hand edit of the schedule
// (studio/model/pipeline_state.h). The other ranks of a tensor-parallel launch follow the
// opened run's rows, one group each, on its time axis (studio/model/other_ranks.h): laid
// out and drawn as its rows are, hovered alike, never selected or edited. The selection's
// details pane is in timeline_details.cc.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "imgui.h"
#include "studio/ui/colors.h"
#include "studio/model/panel_registry.h"
#include "studio/model/navigation.h"
#include "studio/ui/panels.h"
#include "studio/ui/row_paint.h"
#include "studio/ui/timeline_details.h"
#include "studio/ui/timeline_lanes.h"
#include "studio/model/timeline_layout.h"
#include "studio/ui/timeline_nav.h"
#include "studio/model/why_idle.h"

namespace mpk::studio {
namespace {

constexpr float kLabelWidth = 80.0f;  // "w131 SM 131"
constexpr float kRankLabelWidth = 112.0f;  // "r1 w131 SM 131", when other ranks are shown
constexpr float kRulerHeight = 34.0f;  // time labels, then a lane of step marks
constexpr float kHeaderHeight = 16.0f;
constexpr float kMinBoxPx = 3.0f;     // narrower tasks merge
constexpr float kMinBubblePx = 2.0f;  // narrower bubbles are not drawn
constexpr float kSlicePx = 2.0f;      // colour resolution inside merged boxes
constexpr float kDetailsHeight = 190.0f;
constexpr size_t kMaxArrows = 256;  // per side; the details pane lists them all

const ImU32 kSelectColor = IM_COL32(255, 255, 255, 255);
const ImU32 kProducerColor = IM_COL32(129, 212, 250, 170);
const ImU32 kConsumerColor = IM_COL32(165, 214, 167, 150);

// Everything about one frame's layout.
struct Frame {
  TimeAxis axis;
  ImVec2 origin;           // screen position of the rows' content top-left
  float scroll_y = 0, view_h = 0;
  std::vector<Row> rows;
  std::vector<int32_t> row_of_worker;  // index into rows; -1 when collapsed
  // Boxes of the visible worker rows, with the row index of each list.
  std::vector<int32_t> visible_rows;
  std::vector<std::vector<TaskBox>> tasks;
  std::vector<std::vector<BubbleBox>> bubbles;
};

// The opened run's groups of workers (the other ranks' groups follow them).
int32_t opened_groups(const StudioState& s) {
  return (s.model->num_workers() + s.timeline.group_size - 1) / std::max(s.timeline.group_size, 1);
}

// The model a row's boxes come from, and how far its times are moved on the axis.
const TraceModel& model_of(const StudioState& s, int32_t other_rank) {
  return other_rank < 0 ? *s.model : *s.other_ranks[static_cast<size_t>(other_rank)].model;
}
int64_t shift_of(const StudioState& s, int32_t other_rank) {
  return other_rank < 0 ? 0 : s.other_ranks[static_cast<size_t>(other_rank)].shift_ns;
}

// Every row: the opened run's, then each other rank's group.
std::vector<Row> all_rows(const StudioState& s) {
  const TimelineState& tl = s.timeline;
  std::vector<Row> rows = layout_rows(s.model->num_workers(), tl.group_size, tl.collapsed, tl.row_height, kHeaderHeight);
  append_rank_rows(rows, s.other_ranks, opened_groups(s), tl.collapsed, tl.row_height, kHeaderHeight);
  return rows;
}

void setup_for_model(StudioState& s, float rows_h) {
  TimelineState& tl = s.timeline;
  if (tl.laid_out_for == s.model.get()) return;
  tl.laid_out_for = s.model.get();
  const int32_t groups = opened_groups(s) + static_cast<int32_t>(s.other_ranks.size());
  int32_t workers = s.model->num_workers();
  for (const OtherRank& r : s.other_ranks) workers += r.model->num_workers();
  tl.collapsed.assign(static_cast<size_t>(groups), false);
  const float fit = (rows_h - static_cast<float>(groups) * kHeaderHeight) / static_cast<float>(std::max(workers, 1));
  tl.row_height = std::clamp(std::floor(fit), 8.0f, 20.0f);
}

// A request to show a worker's row (Go to, --select, the workers view, search): expands
// its group and scrolls to it. ImGui scrolls on the next frame within the last frame's
// content, so the request stays until the row is on screen, for a few frames at most.
void scroll_to_requested_row(TimelineState& tl, const Frame& f, int32_t num_workers) {
  if (tl.scroll_to_worker < 0 || tl.scroll_to_worker >= num_workers) {
    tl.scroll_to_worker = -1;
    return;
  }
  tl.collapsed[static_cast<size_t>(tl.scroll_to_worker / std::max(tl.group_size, 1))] = false;
  const int32_t r = f.row_of_worker[static_cast<size_t>(tl.scroll_to_worker)];
  const Row* row = r >= 0 ? &f.rows[static_cast<size_t>(r)] : nullptr;
  if (row && row->y >= f.scroll_y && row->y + row->height <= f.scroll_y + f.view_h) {
    tl.scroll_to_worker = -1;
    tl.scroll_tries = 0;
    return;
  }
  if (row) ImGui::SetScrollY(std::max(0.0f, row->y - f.view_h / 3));
  if (++tl.scroll_tries > 4) tl.scroll_to_worker = -1, tl.scroll_tries = 0;
}

// The worker row's centre y, or the group header's when the group is collapsed.
float row_center(const Frame& f, const TimelineState& tl, int32_t worker) {
  const int32_t g = worker / std::max(tl.group_size, 1);
  const int32_t r = f.row_of_worker[static_cast<size_t>(worker)];
  if (r >= 0) return f.origin.y + f.rows[static_cast<size_t>(r)].y + f.rows[static_cast<size_t>(r)].height * 0.5f;
  for (const Row& row : f.rows)
    if (row.kind == Row::kGroupHeader && row.group == g) return f.origin.y + row.y + row.height * 0.5f;
  return f.origin.y;
}

// Keys: Left/Right pan, +/- zoom, F fit, Home/End, Up/Down scroll, Esc deselect; with
// Alt or Ctrl, the hand-edit keys (Alt+arrows move the selected task, Ctrl+Z/Y).
void handle_keys(StudioState& s, float row_h) {
  const ImGuiIO& io = ImGui::GetIO();
  if (io.WantTextInput) return;
  handle_edit_keys(s);
  if (io.KeyCtrl || io.KeyAlt) return;
  const TimeWindow extent = launch_extent(s);  // every rank's rows
  const double run_ns = extent.t1_ns;
  const double span = s.window.span();
  const double mid = s.window.t0_ns + span / 2;
  if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_LeftArrow))) s.window = pan_by(s.window, -0.1 * span, run_ns);
  if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_RightArrow))) s.window = pan_by(s.window, 0.1 * span, run_ns);
  if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Home))) s.window = {extent.t0_ns - 0.01 * span, extent.t0_ns + 0.99 * span};
  if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_End))) s.window = {run_ns + 0.01 * span - span, run_ns + 0.01 * span};
  if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape))) {
    if (s.selection.exec >= 0)
      select_execution(s, -1);
    else
      s.range.reset();
  }
  if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_UpArrow)))
    ImGui::SetScrollY(ImGui::GetScrollY() - 3 * row_h);
  if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_DownArrow)))
    ImGui::SetScrollY(ImGui::GetScrollY() + 3 * row_h);
  if (ImGui::IsKeyPressed(kKeyF3)) step_search(s, !io.KeyShift);
  for (ImWchar c : io.InputQueueCharacters) {
    if (c == '+' || c == '=') s.window = zoom_at(s.window, mid, 0.8, run_ns);
    if (c == '-' || c == '_') s.window = zoom_at(s.window, mid, 1.25, run_ns);
    if (c == 'f' || c == 'F') fit_window(s);
    if (c == 'z' || c == 'Z') zoom_to(s);
    if (c == 'e' || c == 'E') s.timeline.edit_mode = !s.timeline.edit_mode;
  }
}

// Wheel and drag over the rows; returns true when the left button was released
// without dragging (a click).
bool handle_mouse(StudioState& s, const Frame& f, bool hovered) {
  TimelineState& tl = s.timeline;
  const ImGuiIO& io = ImGui::GetIO();
  const double run_ns = static_cast<double>(s.model->duration_ns());
  const double end_ns = launch_extent(s).t1_ns;  // zoom and pan cover every rank's rows
  if (hovered && io.MouseWheel != 0) {
    if (io.KeyShift) {
      ImGui::SetScrollY(ImGui::GetScrollY() - io.MouseWheel * 3 * tl.row_height);
    } else {
      const double x = std::max<double>(io.MousePos.x, f.axis.x0);
      s.window = zoom_at(s.window, f.axis.t_of(x), std::pow(0.8, io.MouseWheel), end_ns);
    }
  }
  if (ImGui::IsItemActivated()) {
    tl.drag_active = false;
    tl.drag_start_x = io.MousePos.x;
  }
  if (ImGui::IsItemActive() && ImGui::IsMouseDragging(ImGuiMouseButton_Left, 3.0f)) {
    tl.drag_active = true;
    if (tl.move_task < 0) {  // a drag that grabbed a task moves it instead (handle_move_drag)
      s.window = pan_by(s.window, -static_cast<double>(io.MouseDelta.x) * f.axis.ns_per_px, end_ns);
      ImGui::SetScrollY(ImGui::GetScrollY() - io.MouseDelta.y);
    }
  }
  // Right-button drag picks a time range (s.range, which the statistics view follows).
  if (hovered && ImGui::IsMouseClicked(ImGuiMouseButton_Right)) {
    tl.range_drag = true;
    tl.range_anchor_ns = f.axis.t_of(io.MousePos.x);
  }
  if (tl.range_drag) {
    const double t = f.axis.t_of(io.MousePos.x);
    const double lo = std::max(0.0, std::min(t, tl.range_anchor_ns));
    const double hi = std::min(run_ns, std::max(t, tl.range_anchor_ns));
    if (hi - lo >= 3 * f.axis.ns_per_px) s.range = TimeWindow{lo, hi};
    if (!ImGui::IsMouseDown(ImGuiMouseButton_Right)) tl.range_drag = false;
  }
  return ImGui::IsItemDeactivated() && !tl.drag_active;
}

void layout_frame(const StudioState& s, Frame& f) {
  f.rows = all_rows(s);
  f.row_of_worker.assign(static_cast<size_t>(s.model->num_workers()), -1);
  for (size_t i = 0; i < f.rows.size(); ++i)
    if (f.rows[i].kind == Row::kWorker && f.rows[i].other_rank < 0)
      f.row_of_worker[static_cast<size_t>(f.rows[i].worker)] = static_cast<int32_t>(i);
  for (size_t i = 0; i < f.rows.size(); ++i) {
    const Row& r = f.rows[i];
    if (r.kind != Row::kWorker || r.y + r.height < f.scroll_y || r.y > f.scroll_y + f.view_h) continue;
    f.visible_rows.push_back(static_cast<int32_t>(i));
    f.tasks.emplace_back();
    f.bubbles.emplace_back();
    const TraceModel& m = model_of(s, r.other_rank);
    const TimeAxis axis = shifted_axis(f.axis, static_cast<double>(shift_of(s, r.other_rank)));
    layout_tasks(m, r.worker, axis, kMinBoxPx, f.tasks.back());
    layout_bubbles(m, r.worker, axis, kMinBubblePx, f.bubbles.back());
  }
}

// What is under the mouse: a header (toggle), a task box, a merged box, a bubble; of the
// opened run, or of another rank (its model's indices).
struct Hit {
  int32_t header_group = -1;
  int64_t exec = -1;
  std::optional<TaskBox> merged;
  int32_t worker = -1;
  int64_t bubble = -1;
  int32_t other_rank = -1;  // index into s.other_ranks; -1: the opened run
};

Hit hit_test(const StudioState& s, const Frame& f, ImVec2 mouse) {
  Hit h;
  const int32_t ri = row_at(f.rows, mouse.y - f.origin.y);
  if (ri < 0) return h;
  const Row& row = f.rows[static_cast<size_t>(ri)];
  h.other_rank = row.other_rank;
  if (row.kind == Row::kGroupHeader) {
    h.header_group = row.group;
    return h;
  }
  if (mouse.x < f.axis.x0) return h;
  h.worker = row.worker;
  const auto vi = std::find(f.visible_rows.begin(), f.visible_rows.end(), ri);
  if (vi == f.visible_rows.end()) return h;
  const std::vector<TaskBox>& boxes = f.tasks[static_cast<size_t>(vi - f.visible_rows.begin())];
  const TaskBox* best = nullptr;
  float best_d = 2.5f;  // pixels of slack around thin boxes
  for (const TaskBox& b : boxes) {
    const float d = mouse.x < b.x0 ? b.x0 - mouse.x : mouse.x > b.x1 ? mouse.x - b.x1 : 0.0f;
    if (d < best_d || (d == 0 && best_d == 0 && b.x1 - b.x0 < best->x1 - best->x0)) best = &b, best_d = d;
  }
  if (best) {
    if (best->merged)
      h.merged = *best;
    else
      h.exec = best->exec;
    return h;
  }
  const TraceModel& m = model_of(s, row.other_rank);
  const Bubble* b = m.bubble_at(row.worker, static_cast<int64_t>(f.axis.t_of(mouse.x)) - shift_of(s, row.other_rank));
  if (b) h.bubble = b - m.bubbles(row.worker).data();
  return h;
}

// Where the dragged task would land with its box's left edge under the mouse (less the
// grab offset): on `worker` (-1: nowhere), after the last task of that worker's list at
// the dragged step that starts before that time.
void set_drop(StudioState& s, const Frame& f, int32_t worker) {
  TimelineState& tl = s.timeline;
  tl.move_worker = worker;
  tl.move_after = -1;
  tl.move_noop = false;
  if (worker < 0) return;
  const TraceModel& m = *s.model;
  const double t = f.axis.t_of(ImGui::GetIO().MousePos.x - tl.move_grab_dx);
  const IndexRange r = m.worker_range(worker);
  bool own = false;
  TaskId own_after = -1;
  for (int64_t i = r.begin; i < r.end; ++i) {
    const Execution& e = m.execution(i);
    if (e.step != tl.move_step) continue;
    if (e.task == tl.move_task) {
      own = true;
      own_after = tl.move_after;
      continue;
    }
    if (static_cast<double>(e.start_ns) > t) break;
    tl.move_after = e.task;
  }
  tl.move_noop = own && own_after == tl.move_after;
}

// Ctrl+drag, Alt+drag, or a drag in edit mode: pressing on a task grabs it (selects it,
// and loads an edit session when the run has none); while dragged its landing place
// follows the mouse; the release moves it there (edit_move: refused moves say why in the
// status line). Window managers that take Alt+drag leave Ctrl and the edit mode.
void handle_move_drag(StudioState& s, const Frame& f, const Hit& hit, bool hovered) {
  TimelineState& tl = s.timeline;
  const ImGuiIO& io = ImGui::GetIO();
  if (ImGui::IsItemActivated() && (io.KeyAlt || io.KeyCtrl || tl.edit_mode) && hit.exec >= 0 && hit.other_rank < 0) {
    const Execution& e = s.model->execution(hit.exec);
    select_execution(s, hit.exec);
    tl.move_task = e.task;
    tl.move_step = e.step;
    tl.move_grab_dx = io.MousePos.x - static_cast<float>(f.axis.x_of(static_cast<double>(e.start_ns)));
    tl.move_worker = -1;
    if (!has_edit_session(s)) begin_edit_session(s);
  }
  if (tl.move_task < 0) return;
  if (ImGui::IsItemActive()) {
    if (tl.drag_active) set_drop(s, f, hovered && hit.other_rank < 0 ? hit.worker : -1);
    return;
  }
  const TaskId t = tl.move_task;
  tl.move_task = -1;
  if (tl.drag_active && tl.move_worker >= 0 && !tl.move_noop) edit_move(s, {t}, tl.move_worker, tl.move_after);
  tl.move_worker = -1;
}

// The dragged task's box where it would land, and what the drop would do.
void draw_move(const StudioState& s, const Frame& f) {
  const TimelineState& tl = s.timeline;
  if (tl.move_task < 0 || !tl.drag_active || tl.move_worker < 0) return;
  const int64_t x = s.model->find(tl.move_task, tl.move_step);
  const int32_t r = f.row_of_worker[static_cast<size_t>(tl.move_worker)];
  if (x < 0 || r < 0) return;
  const Execution& e = s.model->execution(x);
  const Row& row = f.rows[static_cast<size_t>(r)];
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const float x0 = ImGui::GetIO().MousePos.x - tl.move_grab_dx;
  const float w = std::max(3.0f, static_cast<float>(static_cast<double>(e.end_ns - e.start_ns) / f.axis.ns_per_px));
  const ImVec2 a(x0, f.origin.y + row.y), b(x0 + w, f.origin.y + row.y + row.height);
  const ImU32 c = tl.move_noop ? IM_COL32(160, 160, 160, 255) : IM_COL32(255, 255, 255, 255);
  dl->AddRectFilled(a, b, with_alpha(kind_color(s.model->kind_of(tl.move_task)), 120));
  dl->AddRect(a, b, c, 0, 0, 2.0f);
  const std::string label =
      tl.move_noop ? "its place now"
                   : "task " + std::to_string(tl.move_task) + " to " + s.model->row_label(tl.move_worker) +
                         (tl.move_after < 0 ? ", first" : ", after task " + std::to_string(tl.move_after));
  dl->AddText(ImVec2(b.x + 4, a.y), c, label.c_str());
}

void draw_ruler(const StudioState& s, const TimeAxis& axis, ImVec2 p0, float width) {
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 p1(p0.x + width, p0.y + kRulerHeight);
  const float mid = p0.y + 18;  // time ticks above, step marks below
  const ImU32 text = IM_COL32(220, 220, 220, 255);
  const ImU32 step_color = IM_COL32(255, 193, 7, 255);
  dl->AddRectFilled(p0, p1, IM_COL32(30, 33, 38, 255));
  dl->AddText(ImVec2(p0.x + 6, p0.y + 2), IM_COL32(150, 150, 150, 255), "time");
  dl->AddText(ImVec2(p0.x + 6, mid), IM_COL32(150, 150, 150, 255), "steps");
  dl->PushClipRect(ImVec2(axis.x0, p0.y), p1, true);
  const Ruler r = make_ruler(axis);
  for (double t : r.minor) {
    const float x = static_cast<float>(axis.x_of(t));
    dl->AddLine(ImVec2(x, mid - 4), ImVec2(x, mid), IM_COL32(130, 130, 130, 255));
  }
  for (const Tick& t : r.ticks) {
    const float x = static_cast<float>(axis.x_of(t.t_ns));
    dl->AddLine(ImVec2(x, mid - 9), ImVec2(x, mid), text);
    dl->AddText(ImVec2(x + 3, p0.y + 1), text, t.label.c_str());
  }
  dl->AddLine(ImVec2(axis.x0, mid), ImVec2(p1.x, mid), IM_COL32(80, 80, 80, 255));
  // Step starts: a mark each, a label where there is room for it.
  float free_from = -1e9f;
  for (const StepRecord& st : s.model->steps()) {
    const float x = static_cast<float>(axis.x_of(static_cast<double>(st.start_ns)));
    if (x > p1.x) break;
    const float x_end = static_cast<float>(axis.x_of(static_cast<double>(st.end_ns)));
    if (x_end < axis.x0) continue;
    dl->AddLine(ImVec2(x, mid), ImVec2(x, p1.y), step_color);
    const std::string label = std::to_string(st.step);
    const std::string wide = "step " + label;
    const float w_wide = ImGui::CalcTextSize(wide.c_str()).x;
    const float w_short = ImGui::CalcTextSize(label.c_str()).x;
    const float room = x_end - x;
    const float lx = std::max(x, axis.x0) + 3;
    if (lx < free_from) continue;
    if (room > w_wide + 8) {
      dl->AddText(ImVec2(lx, mid + 1), step_color, wide.c_str());
      free_from = lx + w_wide + 4;
    } else if (room > w_short + 5) {
      dl->AddText(ImVec2(lx, mid + 1), step_color, label.c_str());
      free_from = lx + w_short + 4;
    }
  }
  dl->PopClipRect();
}

void draw_hatched(ImDrawList* dl, ImVec2 a, ImVec2 b, ImU32 color) {
  dl->AddRectFilled(a, b, with_alpha(color, 55));
  if (b.x - a.x < 5) return;
  const float h = b.y - a.y;
  dl->PushClipRect(a, b, true);
  for (float x = a.x - h; x < b.x; x += 6) dl->AddLine(ImVec2(x, b.y), ImVec2(x + h, a.y), with_alpha(color, 200));
  dl->PopClipRect();
}

void draw_rows(StudioState& s, const Frame& f, const Hit& hit) {
  TimelineState& tl = s.timeline;
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const float right = f.axis.x0 + f.axis.width;
  const float text_h = ImGui::GetTextLineHeight();
  const int hovered_kind = s.hovered_kind;
  std::vector<KindSlice> slices;
  tl.boxes_drawn = 0;
  tl.merged_boxes = 0;
  // Group headers.
  for (const Row& r : f.rows) {
    if (r.kind != Row::kGroupHeader || r.y + r.height < f.scroll_y || r.y > f.scroll_y + f.view_h) continue;
    const ImVec2 a(f.origin.x, f.origin.y + r.y), b(right, f.origin.y + r.y + r.height);
    dl->AddRectFilled(a, b, hit.header_group == r.group ? IM_COL32(55, 62, 74, 255) : IM_COL32(40, 44, 52, 255));
    const bool closed = tl.collapsed[static_cast<size_t>(r.group)];
    std::string label = closed ? "+ " : "- ";
    if (r.other_rank >= 0) {
      label += rank_title(s.other_ranks[static_cast<size_t>(r.other_rank)].run());
    } else {
      const int32_t first = r.group * tl.group_size;
      const int32_t last = std::min(first + tl.group_size, s.model->num_workers()) - 1;
      if (!s.other_ranks.empty()) label += rank_title(s.model->run()) + ": ";  // which rank is the opened one
      label += "w" + std::to_string(first) + "-" + std::to_string(last);
    }
    dl->AddText(ImVec2(a.x + 4, a.y + (r.height - text_h) * 0.5f), IM_COL32(200, 200, 200, 255), label.c_str());
  }
  const int label_every = std::max(1, static_cast<int>(std::ceil((text_h + 1) / tl.row_height)));
  for (size_t v = 0; v < f.visible_rows.size(); ++v) {
    const Row& r = f.rows[static_cast<size_t>(f.visible_rows[v])];
    const TraceModel& m = model_of(s, r.other_rank);
    const TimeAxis axis = shifted_axis(f.axis, static_cast<double>(shift_of(s, r.other_rank)));
    const bool hit_row = hit.other_rank == r.other_rank;  // hit's indices are of this row's model
    const float y0 = f.origin.y + r.y, y1 = y0 + r.height;
    if (r.worker % 2) dl->AddRectFilled(ImVec2(f.origin.x, y0), ImVec2(right, y1), IM_COL32(255, 255, 255, 8));
    if (r.worker % label_every == 0) {
      const std::string label = r.other_rank < 0 ? m.row_label(r.worker)
                                                 : rank_row_label(s.other_ranks[static_cast<size_t>(r.other_rank)], r.worker);
      dl->AddText(ImVec2(f.origin.x + 8, y0 + (r.height - text_h) * 0.5f), IM_COL32(170, 170, 170, 255), label.c_str());
    }
    dl->PushClipRect(ImVec2(f.axis.x0, y0), ImVec2(right, y1), true);
    const float pad = r.height >= 12 ? 2.0f : 1.0f;
    for (const BubbleBox& b : f.bubbles[v]) {
      const Bubble& bb = m.bubbles(r.worker)[static_cast<size_t>(b.index)];
      const bool hot = hit_row && hit.worker == r.worker && hit.bubble == b.index;
      draw_hatched(dl, ImVec2(b.x0, y0 + pad + 2), ImVec2(b.x1, y1 - pad - 2),
                   hot ? IM_COL32(255, 255, 255, 255) : bubble_color(bb.cause));
    }
    const ViewFilter& filter = tl.filter;
    const bool filtering = filter.active();
    const auto dimmed = [&](const KindSlice& sl) {
      return (hovered_kind >= 0 && static_cast<int>(sl.kind) != hovered_kind) ||
             (filtering && sl.exec >= 0 && !passes(m, filter, sl.exec));
    };
    for (const TaskBox& b : f.tasks[v]) {
      const float x1 = std::max(b.x1, b.x0 + 1.0f);
      ImU32 c = kind_color(b.kind);
      if ((hovered_kind >= 0 && static_cast<int>(b.kind) != hovered_kind) || (filtering && !passes(m, filter, b.exec)))
        c = darken(c, 0.35f);
      const ImVec2 a(b.x0, y0 + pad), z(x1, y1 - pad);
      ++tl.boxes_drawn;
      if (b.merged) {
        ++tl.merged_boxes;
        slices.clear();
        merged_slices(m, b, axis, kSlicePx, slices);
        paint_slices(dl, slices, a.y, z.y, dimmed);
        if (x1 - b.x0 > 34 && r.height >= text_h) {
          const std::string n = std::to_string(b.count);
          dl->AddText(ImVec2(b.x0 + 3, y0 + (r.height - text_h) * 0.5f), IM_COL32(230, 230, 230, 255), n.c_str());
        }
        continue;
      }
      dl->AddRectFilled(a, z, c);
      if (x1 - b.x0 > 8) dl->AddRect(a, z, darken(c, 0.55f));  // narrower: the outline would be all of it
      if (b.count > 1 && x1 - b.x0 > 6) {
        // A linear group: a tick between members, so the box reads as several tasks in one.
        const float step_h = (z.y - a.y) / static_cast<float>(b.count);
        for (int64_t k = 1; k < b.count; ++k)
          dl->AddLine(ImVec2(b.x0 + 1, a.y + step_h * static_cast<float>(k)), ImVec2(b.x0 + 4, a.y + step_h * static_cast<float>(k)),
                      darken(c, 0.4f));
      }
      if (x1 - b.x0 > 48 && r.height >= text_h) {
        const std::string name = b.count > 1 ? std::to_string(b.count) + "x " + m.op_of(m.execution(b.exec).task).name
                                             : m.op_of(m.execution(b.exec).task).name;
        dl->PushClipRect(a, ImVec2(x1 - 2, z.y), true);
        dl->AddText(ImVec2(b.x0 + 3, y0 + (r.height - text_h) * 0.5f), IM_COL32(15, 15, 15, 255), name.c_str());
        dl->PopClipRect();
      }
      if (hit_row && hit.exec >= b.exec && hit.exec < b.exec + b.count) dl->AddRect(a, z, IM_COL32(255, 255, 255, 200), 0, 0, 1.5f);
    }
    dl->PopClipRect();
  }
  // The opened run's step boundaries across the rows.
  float last_x = -1e9f;
  for (const StepRecord& st : s.model->steps()) {
    const float x = static_cast<float>(f.axis.x_of(static_cast<double>(st.end_ns)));
    if (x < f.axis.x0 || x > right || x - last_x < 4) continue;
    last_x = x;
    dl->AddLine(ImVec2(x, f.origin.y + f.scroll_y), ImVec2(x, f.origin.y + f.scroll_y + f.view_h),
                IM_COL32(255, 193, 7, 90), 1.0f);
  }
}

struct Rect {
  ImVec2 Min, Max;
};

// The rectangle of execution `x` on screen (its row, or its collapsed group's header).
Rect exec_rect(const StudioState& s, const Frame& f, int64_t x) {
  const Execution& e = s.model->execution(x);
  const float cy = row_center(f, s.timeline, e.worker);
  const float h = s.timeline.row_height * 0.5f;
  const float x0 = static_cast<float>(std::clamp(f.axis.x_of(static_cast<double>(e.start_ns)), -1e6, 1e6));
  const float x1 = static_cast<float>(std::clamp(f.axis.x_of(static_cast<double>(e.end_ns)), -1e6, 1e6));
  return {ImVec2(x0, cy - h), ImVec2(std::max(x1, x0 + 2), cy + h)};
}

// A curve from `from` to `to` with a head; `small` draws a light one (one of many).
void draw_arrow(ImDrawList* dl, ImVec2 from, ImVec2 to, ImU32 c, float thickness, bool small) {
  const float dx = std::min(60.0f, std::fabs(to.x - from.x) * 0.4f);
  dl->AddBezierCubic(from, ImVec2(from.x + dx, from.y), ImVec2(to.x - dx, to.y), to, c, thickness);
  const float head = small ? 3.0f : 3.0f + 2.0f * thickness;
  dl->AddTriangleFilled(ImVec2(to.x, to.y), ImVec2(to.x - head, to.y - head * 0.6f), ImVec2(to.x - head, to.y + head * 0.6f), c);
}

// The picked time range, shaded across the rows.
void draw_range(StudioState& s, const Frame& f) {
  if (!s.range) return;
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const double left = f.axis.x0, right = f.axis.x0 + f.axis.width;
  const float x0 = static_cast<float>(std::clamp(f.axis.x_of(s.range->t0_ns), left, right));
  const float x1 = static_cast<float>(std::clamp(f.axis.x_of(s.range->t1_ns), left, right));
  const float y0 = f.origin.y + f.scroll_y, y1 = y0 + f.view_h;
  dl->AddRectFilled(ImVec2(x0, y0), ImVec2(x1, y1), IM_COL32(100, 181, 246, 40));
  dl->AddLine(ImVec2(x0, y0), ImVec2(x0, y1), IM_COL32(100, 181, 246, 200));
  dl->AddLine(ImVec2(x1, y0), ImVec2(x1, y1), IM_COL32(100, 181, 246, 200));
  // The readout: what the range holds, at its top (kept on screen).
  TimelineState& tl = s.timeline;
  if (!tl.readout_for || tl.readout_for->t0_ns != s.range->t0_ns || tl.readout_for->t1_ns != s.range->t1_ns ||
      tl.readout_model != s.model.get()) {
    const RangeSummary r = summarize_range(*s.model, s.range->t0_ns, s.range->t1_ns);
    char text[160];
    std::snprintf(text, sizeof text, "%s, %lld tasks, %.3g MB, %.2f TB/s", format_duration(r.duration_ns).c_str(),
                  static_cast<long long>(r.tasks), r.bytes * 1e-6, r.bytes_per_ns() * 1e-3);
    tl.readout = text;
    tl.readout_for = s.range;
    tl.readout_model = s.model.get();
  }
  const ImVec2 size = ImGui::CalcTextSize(tl.readout.c_str());
  const float tx = std::clamp(0.5f * (x0 + x1) - 0.5f * size.x, static_cast<float>(left), static_cast<float>(right) - size.x - 8);
  dl->AddRectFilled(ImVec2(tx - 4, y0 + 2), ImVec2(tx + size.x + 4, y0 + size.y + 6), IM_COL32(20, 40, 60, 230), 3);
  dl->AddText(ImVec2(tx, y0 + 4), IM_COL32(187, 222, 251, 255), tl.readout.c_str());
}

// Outlines the executions of the tasks another view highlighted (the graph view's node).
void draw_highlighted(const StudioState& s, const Frame& f) {
  if (s.highlighted_tasks.empty()) return;
  const TraceModel& m = *s.model;
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const float right = f.axis.x0 + f.axis.width;
  dl->PushClipRect(ImVec2(f.axis.x0, f.origin.y + f.scroll_y), ImVec2(right, f.origin.y + f.scroll_y + f.view_h), true);
  const TaskId num_tasks = static_cast<TaskId>(m.graph().graph.tasks.size());
  for (TaskId t : s.highlighted_tasks) {
    if (t < 0 || t >= num_tasks) continue;
    for (int32_t k = 0; k < m.num_steps(); ++k) {
      const int64_t x = m.find(t, k);
      if (x < 0) continue;
      const Execution& e = m.execution(x);
      const int32_t r = f.row_of_worker[static_cast<size_t>(e.worker)];
      if (r < 0) continue;
      const Row& row = f.rows[static_cast<size_t>(r)];
      if (row.y + row.height < f.scroll_y || row.y > f.scroll_y + f.view_h) continue;
      const double a = f.axis.x_of(static_cast<double>(e.start_ns)), b = f.axis.x_of(static_cast<double>(e.end_ns));
      if (b < f.axis.x0 || a > right) continue;
      const float x0 = static_cast<float>(std::max(a, -1e6)), x1 = std::max(static_cast<float>(std::min(b, 1e6)), x0 + 2.0f);
      dl->AddRect(ImVec2(x0 - 1, f.origin.y + row.y), ImVec2(x1 + 1, f.origin.y + row.y + row.height),
                  IM_COL32(255, 64, 255, 255), 0, 0, 1.5f);
    }
  }
  dl->PopClipRect();
}

void draw_selection(StudioState& s, const Frame& f) {
  if (s.selection.exec < 0) return;
  const TraceModel& m = *s.model;
  ImDrawList* dl = ImGui::GetWindowDrawList();
  dl->PushClipRect(ImVec2(f.axis.x0, f.origin.y + f.scroll_y),
                   ImVec2(f.axis.x0 + f.axis.width, f.origin.y + f.scroll_y + f.view_h), true);
  const Rect sel = exec_rect(s, f, s.selection.exec);
  if (s.selection.show_why_idle) {
    const std::vector<int64_t>& w = s.selection.why_idle;
    for (size_t i = 0; i < w.size(); ++i) {
      const Rect r = exec_rect(s, f, w[i]);
      dl->AddRect(r.Min, r.Max, walk_color(), 0, 0, 2.5f);
      if (i > 0) {
        const Rect p = exec_rect(s, f, w[i - 1]);
        draw_arrow(dl, ImVec2(p.Max.x, (p.Min.y + p.Max.y) / 2), ImVec2(r.Min.x, (r.Min.y + r.Max.y) / 2), walk_color(), 2.5f, false);
      }
    }
  } else {
    const std::vector<DepLink> producers = m.producers(s.selection.exec);
    const std::vector<DepLink> consumers = m.consumers(s.selection.exec);
    size_t n = 0;
    for (const DepLink& d : producers) {
      if (d.exec < 0 || n++ >= kMaxArrows) continue;
      const Rect p = exec_rect(s, f, d.exec);
      draw_arrow(dl, ImVec2(p.Max.x, (p.Min.y + p.Max.y) / 2), ImVec2(sel.Min.x, (sel.Min.y + sel.Max.y) / 2), producers.size() > 16 ? with_alpha(kProducerColor, 80) : kProducerColor, 1.0f, producers.size() > 16);
    }
    n = 0;
    for (const DepLink& d : consumers) {
      if (d.exec < 0 || n++ >= kMaxArrows) continue;
      const Rect c = exec_rect(s, f, d.exec);
      draw_arrow(dl, ImVec2(sel.Max.x, (sel.Min.y + sel.Max.y) / 2), ImVec2(c.Min.x, (c.Min.y + c.Max.y) / 2), consumers.size() > 16 ? with_alpha(kConsumerColor, 80) : kConsumerColor, 1.0f, consumers.size() > 16);
    }
  }
  dl->AddRect(ImVec2(sel.Min.x - 1, sel.Min.y - 1), ImVec2(sel.Max.x + 1, sel.Max.y + 1), kSelectColor, 0, 0, 2.0f);
  dl->PopClipRect();
}

void show_tooltip(StudioState& s, const Hit& hit) {
  TimelineState& tl = s.timeline;
  tl.hover_text.clear();
  const TraceModel& m = model_of(s, hit.other_rank);
  const int64_t shift = shift_of(s, hit.other_rank);
  if (hit.exec >= 0) {
    tl.hover_text = explain_execution(m, hit.exec, shift);
  } else if (hit.merged) {
    tl.hover_text = explain_merged(m, *hit.merged, shift);
  } else if (hit.bubble >= 0) {
    tl.hover_text = explain_bubble(m, m.bubbles(hit.worker)[static_cast<size_t>(hit.bubble)], shift);
  } else if (hit.header_group >= 0) {
    tl.hover_text = tl.collapsed[static_cast<size_t>(hit.header_group)] ? "click to expand" : "click to collapse";
    if (hit.other_rank >= 0)
      tl.hover_text += "; open run " + std::to_string(m.run().id) + " in the run list to work on this rank";
  }
  if (tl.hover_text.empty()) return;
  if (hit.other_rank >= 0) tl.hover_text = rank_caption(s.other_ranks[static_cast<size_t>(hit.other_rank)]) + "\n" + tl.hover_text;
  ImGui::BeginTooltip();
  ImGui::TextUnformatted(tl.hover_text.c_str());
  ImGui::EndTooltip();
}

void handle_click(StudioState& s, const Hit& hit) {
  TimelineState& tl = s.timeline;
  if (hit.header_group >= 0) {
    tl.collapsed[static_cast<size_t>(hit.header_group)] = !tl.collapsed[static_cast<size_t>(hit.header_group)];
  } else if (hit.exec >= 0) {
    if (hit.other_rank < 0) select_execution(s, hit.exec);  // another rank's tasks are shown, not worked on
  } else if (hit.merged) {
    const double pad = 0.05 * static_cast<double>(hit.merged->t1_ns - hit.merged->t0_ns);
    const double shift = static_cast<double>(shift_of(s, hit.other_rank));
    s.window = {static_cast<double>(hit.merged->t0_ns) + shift - pad, static_cast<double>(hit.merged->t1_ns) + shift + pad};
  } else {
    select_execution(s, -1);
  }
}

void draw_toolbar(StudioState& s) {
  TimelineState& tl = s.timeline;
  if (ImGui::Button("Fit")) fit_window(s);
  ImGui::SameLine();
  if (ImGui::Button("Expand all")) std::fill(tl.collapsed.begin(), tl.collapsed.end(), false);
  ImGui::SameLine();
  if (ImGui::Button("Collapse all")) std::fill(tl.collapsed.begin(), tl.collapsed.end(), true);
  ImGui::SameLine();
  ImGui::SetNextItemWidth(90);
  ImGui::SliderFloat("row height", &tl.row_height, 6.0f, 32.0f, "%.0f px");
  ImGui::SameLine();
  ImGui::BeginDisabled(s.selection.exec < 0);
  if (ImGui::Button("Why idle?")) show_why_idle(s);
  ImGui::EndDisabled();
  const ImVec2 b0 = ImGui::GetItemRectMin(), b1 = ImGui::GetItemRectMax();
  tl.why_button_x = (b0.x + b1.x) / 2;
  tl.why_button_y = (b0.y + b1.y) / 2;
  if (s.range) {
    ImGui::SameLine();
    if (ImGui::Button("Clear range")) s.range.reset();
  }
  ImGui::SameLine();
  ImGui::TextDisabled("window %s from %s of %s", format_duration(s.window.span()).c_str(),
                      format_duration(s.window.t0_ns).c_str(),
                      format_duration(static_cast<double>(s.model->duration_ns())).c_str());
  draw_navigation_bar(s);
  if (tl.show_legend) {
    bool present[kNumOpKinds] = {};
    for (const Operator& op : s.model->graph().program.ops) present[static_cast<size_t>(op.kind)] = true;
    int legend_kind = -1;
    draw_kind_legend(present, &legend_kind);
    if (legend_kind >= 0) s.hovered_kind = legend_kind;
  }
}

}  // namespace

static void draw_timeline_panel(StudioState& s) {
  if (!s.model) {
    ImGui::TextDisabled("No run is open.");
    return;
  }
  TimelineState& tl = s.timeline;
  s.hovered_kind = -1;  // set below by the legend or the task under the mouse
  draw_toolbar(s);

  const float details_h = s.selection.exec >= 0 ? kDetailsHeight : 0.0f;
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float rows_h = std::max(60.0f, avail.y - kRulerHeight - kLanesHeight - details_h);
  setup_for_model(s, rows_h);

  // Ruler above the rows, aligned with the rows' canvas (the rows always show a scrollbar).
  const ImVec2 ruler_p = ImGui::GetCursorScreenPos();
  const float scrollbar = ImGui::GetStyle().ScrollbarSize;
  const float label_w = s.other_ranks.empty() ? kLabelWidth : kRankLabelWidth;
  const float canvas_w = std::max(10.0f, avail.x - label_w - scrollbar);
  ImGui::Dummy(ImVec2(avail.x, kRulerHeight + kLanesHeight));

  ImGui::BeginChild("rows", ImVec2(0, rows_h), false,
                    ImGuiWindowFlags_NoScrollWithMouse | ImGuiWindowFlags_AlwaysVerticalScrollbar);
  Frame f;
  f.origin = ImGui::GetCursorScreenPos();
  f.scroll_y = ImGui::GetScrollY();
  f.view_h = ImGui::GetWindowHeight();
  handle_keys(s, tl.row_height);
  const std::vector<Row> rows = all_rows(s);
  const float content_h = rows.empty() ? 0.0f : rows.back().y + rows.back().height;
  ImGui::InvisibleButton("canvas", ImVec2(label_w + canvas_w, std::max(content_h, f.view_h - 1)));
  const bool hovered = ImGui::IsItemHovered();
  f.axis = TimeAxis(s.window, f.origin.x + label_w, canvas_w);
  const bool clicked = handle_mouse(s, f, hovered);
  f.axis = TimeAxis(s.window, f.origin.x + label_w, canvas_w);  // after zoom and pan
  layout_frame(s, f);
  scroll_to_requested_row(tl, f, s.model->num_workers());

  const Hit hit = hovered ? hit_test(s, f, ImGui::GetIO().MousePos) : Hit{};
  const bool opened_row = hit.other_rank < 0;
  tl.hovered_exec = opened_row ? hit.exec : -1;
  tl.hovered_bubble_worker = opened_row && hit.bubble >= 0 ? hit.worker : -1;
  tl.hovered_bubble = opened_row ? hit.bubble : -1;
  tl.hovered_rank = hit.other_rank;
  if (hit.exec >= 0) {
    const TraceModel& m = model_of(s, hit.other_rank);
    s.hovered_kind = static_cast<int>(m.kind_of(m.execution(hit.exec).task));
  }
  if (clicked && hovered) handle_click(s, hit);
  handle_move_drag(s, f, hit, hovered);

  draw_rows(s, f, hit);
  draw_range(s, f);
  draw_highlighted(s, f);
  draw_selection(s, f);
  draw_move(s, f);
  if (hovered && !ImGui::IsItemActive()) show_tooltip(s, hit);
  else tl.hover_text.clear();

  // Geometry for tests and other panels.
  tl.canvas_x0 = f.axis.x0;
  tl.canvas_width = f.axis.width;
  tl.canvas_y0 = f.origin.y;
  tl.view_y0 = f.origin.y + f.scroll_y;
  tl.canvas_height = f.view_h;
  tl.row_y.assign(static_cast<size_t>(s.model->num_workers()), -1.0f);
  tl.rank_row_y.resize(s.other_ranks.size());
  for (size_t k = 0; k < s.other_ranks.size(); ++k)
    tl.rank_row_y[k].assign(static_cast<size_t>(s.other_ranks[k].model->num_workers()), -1.0f);
  for (int32_t ri : f.visible_rows) {
    const Row& r = f.rows[static_cast<size_t>(ri)];
    std::vector<float>& ys = r.other_rank < 0 ? tl.row_y : tl.rank_row_y[static_cast<size_t>(r.other_rank)];
    ys[static_cast<size_t>(r.worker)] = f.origin.y + r.y;
  }
  ImGui::EndChild();
  draw_ruler(s, f.axis, ruler_p, avail.x - scrollbar);
  draw_timeline_lanes(s, f.axis, ImVec2(ruler_p.x, ruler_p.y + kRulerHeight), avail.x - scrollbar);

  if (s.selection.exec >= 0) draw_timeline_details(s, [&](int64_t x) { show_execution(s, x); });
}

MPK_STUDIO_PANEL(timeline, "Timeline", 10, draw_timeline_panel);

}  // namespace mpk::studio
