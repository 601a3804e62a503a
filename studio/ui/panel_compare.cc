// The compare view: run A above run B (the current run and the compare run; after an
// Apply or a stored hand edit the old run is A and the new, current one B), labelled as
// simulated or measured, with the cost model of a simulation; one row per worker,
// on one time axis shared with the timeline (wheel zooms at the cursor, drag pans,
// double click fits both runs), merged tasks drawn as the timeline draws them (busy
// columns, so idle time shows at every zoom), each run's step ends marked; below, a table of what
// changed from A to B: makespan per step, utilization, idle time by cause, time per
// operator kind and the critical path of the median step.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "imgui.h"
#include "studio/ui/colors.h"
#include "studio/model/panel_registry.h"
#include "studio/ui/panels.h"
#include "studio/ui/row_paint.h"
#include "studio/model/timeline_layout.h"

namespace mpk::studio {
namespace {

constexpr float kRulerHeight = 20;
constexpr float kLabelHeight = 18;
constexpr float kMinBoxPx = 3;
constexpr float kSlicePx = 2;  // the timeline's

// Builds (or keeps) the model of run A against run B; nullptr with the reason in v.error
// when there is none. The model loads the run that is not the current one.
CompareModel* compare_model(StudioState& s) {
  CompareViewState& v = s.compare;
  const int64_t a = s.compare_current_is_b ? s.compare_run : s.run;
  const int64_t b = s.compare_current_is_b ? s.run : s.compare_run;
  if (v.run_a == a && v.run_b == b && v.trace_path == s.trace_path) return v.model.get();
  v.model.reset();
  v.error.clear();
  v.run_a = a;
  v.run_b = b;
  v.trace_path = s.trace_path;
  if (s.compare_run < 0) return nullptr;
  try {
    v.model = std::make_shared<CompareModel>(*s.reader, a, *s.reader, b,
                                             s.compare_current_is_b ? CompareSide::kA : CompareSide::kB);
  } catch (const std::exception& e) {
    v.error = e.what();
  }
  return v.model.get();
}

void draw_run_picker(StudioState& s) {
  ImGui::AlignTextToFramePadding();
  const bool swapped = s.compare_current_is_b;
  ImGui::Text(swapped ? "B (current): run %lld  against  A:" : "A: run %lld  against  B:",
              static_cast<long long>(s.run));
  ImGui::SameLine();
  ImGui::SetNextItemWidth(360);
  const RunRecord* other = find_run(s, s.compare_run);
  const std::string preview = other ? describe_run(*other) : "(pick a run)";
  if (ImGui::BeginCombo("##compare", preview.c_str())) {
    for (const RunRecord& r : s.runs) {
      if (r.id == s.run) continue;
      if (ImGui::Selectable(describe_run(r).c_str(), r.id == s.compare_run)) {
        s.compare_run = r.id;
        s.compare_current_is_b = false;  // a pick puts the current run as A
      }
    }
    ImGui::EndCombo();
  }
  ImGui::SameLine();
  ImGui::TextDisabled("(wheel zooms, drag pans, double click fits; the axis is the timeline's)");
}

struct Section {
  const TraceModel* model;
  const char* tag;
  const RunStats* stats;
  float y0;      // top of the label
  float rows_y;  // top of the first row
};

// Adds `busy_ns` drawn around time t to its step's sum in `per_step`.
void add_to_step(const TraceModel& m, double t, double busy_ns, std::vector<double>& per_step) {
  const auto& steps = m.steps();
  const auto it = std::upper_bound(steps.begin(), steps.end(), t,
                                   [](double v, const StepRecord& st) { return v < static_cast<double>(st.end_ns); });
  if (it != steps.end()) per_step[static_cast<size_t>(it - steps.begin())] += busy_ns;
}

void draw_section(ImDrawList* dl, const Section& sec, const TimeAxis& axis, float x1, float row_h,
                  std::vector<TaskBox>& boxes, int64_t& drawn, std::vector<double>& step_busy) {
  const TraceModel& m = *sec.model;
  const RunRecord& r = m.run();
  char label[512];
  const std::string costs = costs_of(r);
  std::snprintf(label, sizeof label, "%s  %s, %s%s%s, %d workers, makespan per step %s (median), utilization %.1f %%",
                sec.tag, describe_run(r).c_str(), r.kind == "sim" ? "simulated" : "measured",
                costs.empty() ? "" : ", ", costs.c_str(), m.num_workers(),
                format_duration(sec.stats->median_step_ns).c_str(), 100.0 * sec.stats->utilization);
  dl->AddRectFilled(ImVec2(axis.x0, sec.y0), ImVec2(x1, sec.y0 + kLabelHeight), IM_COL32(255, 255, 255, 14));
  dl->AddText(ImVec2(axis.x0 + 6, sec.y0 + 2), ImGui::GetColorU32(ImGuiCol_Text), label);
  const float gap = row_h >= 5 ? 1.0f : 0.0f;
  step_busy.assign(static_cast<size_t>(m.num_steps()), 0.0);
  thread_local std::vector<KindSlice> slices;
  for (int32_t w = 0; w < m.num_workers(); ++w) {
    const float y = sec.rows_y + row_h * static_cast<float>(w);
    boxes.clear();
    layout_tasks(m, w, axis, kMinBoxPx, boxes);
    for (const TaskBox& b : boxes) {
      if (b.merged) {
        // Merged tasks: busy columns, as the timeline draws them, so idle time shows at any zoom.
        slices.clear();
        merged_slices(m, b, axis, kSlicePx, slices);
        paint_slices(dl, slices, y, y + row_h - gap, {});
        for (const KindSlice& sl : slices) {
          const double ta = axis.t_of(sl.x0), tb = axis.t_of(sl.x1);
          add_to_step(m, 0.5 * (ta + tb), sl.busy * (tb - ta), step_busy);
        }
        continue;
      }
      dl->AddRectFilled(ImVec2(b.x0, y), ImVec2(std::max(b.x1, b.x0 + 1), y + row_h - gap), kind_color(b.kind));
      const double ta = std::max(static_cast<double>(b.t0_ns), axis.t0_ns);
      const double tb = std::min(static_cast<double>(b.t1_ns), axis.t1_ns());
      if (tb > ta) add_to_step(m, 0.5 * (ta + tb), tb - ta, step_busy);
    }
    drawn += static_cast<int64_t>(boxes.size());
  }
  // Step ends of this run.
  const float rows_end = sec.rows_y + row_h * static_cast<float>(m.num_workers());
  for (const StepRecord& st : m.steps()) {
    const double x = axis.x_of(static_cast<double>(st.end_ns));
    if (x < axis.x0 || x > x1) continue;
    dl->AddLine(ImVec2(static_cast<float>(x), sec.y0 + kLabelHeight), ImVec2(static_cast<float>(x), rows_end),
                IM_COL32(255, 255, 255, 110), 1.0f);
  }
}

void draw_ruler(ImDrawList* dl, const TimeAxis& axis, float y0, float x1, float y1) {
  const ImU32 text = ImGui::GetColorU32(ImGuiCol_TextDisabled);
  const Ruler ruler = make_ruler(axis);
  for (double t : ruler.minor) {
    const float x = static_cast<float>(axis.x_of(t));
    if (x >= axis.x0 && x <= x1) dl->AddLine(ImVec2(x, y0 + kRulerHeight - 4), ImVec2(x, y0 + kRulerHeight), text);
  }
  for (const Tick& t : ruler.ticks) {
    const float x = static_cast<float>(axis.x_of(t.t_ns));
    if (x < axis.x0 || x > x1) continue;
    dl->AddLine(ImVec2(x, y0 + kRulerHeight - 8), ImVec2(x, y1), IM_COL32(255, 255, 255, 22));
    dl->AddText(ImVec2(x + 3, y0 + 1), text, t.label.c_str());
  }
}

void draw_lanes(StudioState& s, const CompareModel& cm, float height) {
  CompareViewState& v = s.compare;
  const ImVec2 p = ImGui::GetCursorScreenPos();
  const float width = std::max(ImGui::GetContentRegionAvail().x, 50.0f);
  ImGui::InvisibleButton("##lanes", ImVec2(width, height));
  const bool hovered = ImGui::IsItemHovered();
  const double run_ns = static_cast<double>(cm.duration_ns());
  const ImGuiIO& io = ImGui::GetIO();
  v.canvas_x0 = p.x;
  v.canvas_y0 = p.y;
  v.canvas_width = width;
  v.canvas_height = height;

  TimeAxis axis(s.window, p.x, width);
  if (hovered && io.MouseWheel != 0) {
    s.window = zoom_at(s.window, axis.t_of(io.MousePos.x), std::pow(0.8, io.MouseWheel), run_ns);
    axis = TimeAxis(s.window, p.x, width);
  }
  if (hovered && ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left)) {
    s.window = fit(run_ns);
    axis = TimeAxis(s.window, p.x, width);
  } else if (ImGui::IsItemActive() && ImGui::IsMouseDragging(ImGuiMouseButton_Left, 2.0f)) {
    s.window = pan_by(s.window, -static_cast<double>(io.MouseDelta.x) * axis.ns_per_px, run_ns);
    axis = TimeAxis(s.window, p.x, width);
    v.drag_active = true;
  } else if (!ImGui::IsItemActive()) {
    v.drag_active = false;
  }

  const bool a_loaded = cm.loaded() == CompareSide::kA;
  const TraceModel& ma = a_loaded ? cm.model() : *s.model;
  const TraceModel& mb = a_loaded ? *s.model : cm.model();
  const int32_t rows = std::max(1, ma.num_workers() + mb.num_workers());
  const float row_h =
      std::clamp((height - kRulerHeight - 2 * kLabelHeight - 8) / static_cast<float>(rows), 1.0f, 14.0f);
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const float x1 = p.x + width;
  dl->PushClipRect(p, ImVec2(x1, p.y + height), true);
  dl->AddRectFilled(p, ImVec2(x1, p.y + height), IM_COL32(0, 0, 0, 40));
  Section a{&ma, "A", &cm.stats_a(), p.y + kRulerHeight, 0};
  a.rows_y = a.y0 + kLabelHeight;
  Section b{&mb, "B", &cm.stats_b(), a.rows_y + row_h * static_cast<float>(ma.num_workers()) + 8, 0};
  b.rows_y = b.y0 + kLabelHeight;
  draw_ruler(dl, axis, p.y, x1, p.y + height);
  thread_local std::vector<TaskBox> boxes;
  v.boxes_drawn = 0;
  draw_section(dl, a, axis, x1, row_h, boxes, v.boxes_drawn, v.step_busy_drawn[0]);
  draw_section(dl, b, axis, x1, row_h, boxes, v.boxes_drawn, v.step_busy_drawn[1]);
  // Where the runs end.
  for (const Section* sec : {&a, &b}) {
    const double x = axis.x_of(static_cast<double>(sec->model->duration_ns()));
    if (x >= p.x && x <= x1)
      dl->AddLine(ImVec2(static_cast<float>(x), sec->y0),
                  ImVec2(static_cast<float>(x), sec->rows_y + row_h * static_cast<float>(sec->model->num_workers())),
                  IM_COL32(255, 80, 80, 200), 2.0f);
  }
  dl->PopClipRect();

  if (!hovered) return;
  const double t = axis.t_of(io.MousePos.x);
  for (const Section* sec : {&a, &b}) {
    const float rel = io.MousePos.y - sec->rows_y;
    const int32_t w = static_cast<int32_t>(std::floor(rel / row_h));
    if (rel < 0 || w >= sec->model->num_workers()) continue;
    const int64_t x = sec->model->execution_at(w, static_cast<int64_t>(t),
                                               static_cast<int64_t>(kMinBoxPx * axis.ns_per_px));
    if (x < 0) {
      ImGui::SetTooltip("%s, worker %d: idle at %s", sec->tag, w, format_duration(t).c_str());
    } else {
      const Execution& e = sec->model->execution(x);
      ImGui::SetTooltip("%s, worker %d: %s\nstep %d, %s from %s", sec->tag, w, sec->model->label(x).c_str(), e.step,
                        format_duration(static_cast<double>(e.end_ns - e.start_ns)).c_str(),
                        format_duration(static_cast<double>(e.start_ns)).c_str());
    }
  }
}

std::string format_value(double v, DeltaUnit unit) {
  char buf[48];
  switch (unit) {
    case DeltaUnit::kNs: return format_duration(v);
    case DeltaUnit::kRatio: std::snprintf(buf, sizeof buf, "%.1f %%", 100.0 * v); return buf;
    case DeltaUnit::kCount: std::snprintf(buf, sizeof buf, "%.0f", v); return buf;
  }
  return "";
}

// Green when B is better than A, red when worse (DeltaRow::better).
ImU32 delta_color(const DeltaRow& r) {
  const int better = r.better();
  if (better == 0) return ImGui::GetColorU32(ImGuiCol_TextDisabled);
  return better > 0 ? IM_COL32(102, 214, 112, 255) : IM_COL32(255, 112, 96, 255);
}

void right_aligned(const std::string& text, ImU32 color) {
  const float w = ImGui::CalcTextSize(text.c_str()).x;
  ImGui::SetCursorPosX(ImGui::GetCursorPosX() + std::max(0.0f, ImGui::GetColumnWidth() - w));
  ImGui::PushStyleColor(ImGuiCol_Text, color);
  ImGui::TextUnformatted(text.c_str());
  ImGui::PopStyleColor();
}

void draw_deltas(const CompareModel& cm) {
  const ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersOuter |
                                ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_ScrollY |
                                ImGuiTableFlags_SizingStretchProp;
  if (!ImGui::BeginTable("deltas", 5, flags, ImVec2(0, std::max(80.0f, ImGui::GetContentRegionAvail().y)))) return;
  ImGui::TableSetupScrollFreeze(0, 1);
  ImGui::TableSetupColumn("", ImGuiTableColumnFlags_WidthStretch, 2.2f);
  ImGui::TableSetupColumn("A", ImGuiTableColumnFlags_WidthStretch, 1);
  ImGui::TableSetupColumn("B", ImGuiTableColumnFlags_WidthStretch, 1);
  ImGui::TableSetupColumn("B - A", ImGuiTableColumnFlags_WidthStretch, 1);
  ImGui::TableSetupColumn("change", ImGuiTableColumnFlags_WidthStretch, 0.8f);
  ImGui::TableHeadersRow();
  const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text);
  std::string group;
  for (const DeltaRow& r : cm.deltas()) {
    if (r.group != group) {
      group = r.group;
      ImGui::TableNextRow();
      ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg0, IM_COL32(255, 255, 255, 16));
      ImGui::TableSetColumnIndex(0);
      ImGui::TextDisabled("%s", group == "idle" ? "idle time by cause" : group == "kind" ? "time per operator kind" : group.c_str());
    }
    ImGui::TableNextRow();
    ImGui::TableSetColumnIndex(0);
    if (r.group == "kind") {
      const std::optional<OpKind> k = parse_op_kind(r.label);
      const ImVec2 p = ImGui::GetCursorScreenPos();
      const float h = ImGui::GetTextLineHeight();
      ImGui::GetWindowDrawList()->AddRectFilled(ImVec2(p.x + 12, p.y + 2), ImVec2(p.x + 8 + h, p.y + h - 2),
                                                k ? kind_color(*k) : IM_COL32(160, 160, 160, 255), 2);
      ImGui::SetCursorScreenPos(ImVec2(p.x + h + 12, p.y));
    } else {
      ImGui::Indent(12);
    }
    ImGui::TextUnformatted(r.label.c_str());
    if (r.group != "kind") ImGui::Unindent(12);
    ImGui::TableSetColumnIndex(1);
    right_aligned(format_value(r.a, r.unit), text);
    ImGui::TableSetColumnIndex(2);
    right_aligned(format_value(r.b, r.unit), text);
    ImGui::TableSetColumnIndex(3);
    const ImU32 c = delta_color(r);
    const std::string d = format_value(r.delta(), r.unit);
    right_aligned((r.delta() > 0 ? "+" : "") + (r.unit == DeltaUnit::kRatio ? d.substr(0, d.size() - 2) + " pt" : d), c);
    ImGui::TableSetColumnIndex(4);
    char rel[32];
    if (r.a != 0)
      std::snprintf(rel, sizeof rel, "%+.1f %%", 100.0 * r.relative());
    else
      std::snprintf(rel, sizeof rel, "%s", r.b != 0 ? "new" : "");
    right_aligned(rel, c);
  }
  ImGui::EndTable();
}

}  // namespace

static void draw_compare_panel(StudioState& s) {
  if (!s.model || !s.reader) {
    ImGui::TextDisabled("No run is open.");
    return;
  }
  draw_run_picker(s);
  const CompareModel* cm = compare_model(s);
  if (!cm) {
    if (!s.compare.error.empty())
      ImGui::TextWrapped("Cannot compare: %s", s.compare.error.c_str());
    else if (s.runs.size() < 2)
      ImGui::TextDisabled("This trace has one run; add another (mpk run --trace with another policy) to compare.");
    else
      ImGui::TextDisabled("Pick a run B above (or right click a run in the list) to compare it with run A.");
    return;
  }
  const std::string& kind_a = cm->stats_a().run.kind;
  const std::string& kind_b = cm->stats_b().run.kind;
  const auto how = [](const std::string& kind) { return kind == "sim" ? "simulated" : "measured"; };
  if (cm->same_kind())
    ImGui::TextDisabled("Both runs are %s (%s): like with like (green: B is better).", how(kind_a), kind_a.c_str());
  else
    ImGui::TextColored(ImVec4(0.95f, 0.75f, 0.35f, 1.0f),
                       "A is %s (%s), B %s (%s): not like with like. Apply and hand edits compare "
                       "simulations under one cost model.",
                       how(kind_a), kind_a.c_str(), how(kind_b), kind_b.c_str());
  const float avail = ImGui::GetContentRegionAvail().y;
  draw_lanes(s, *cm, std::max(160.0f, 0.5f * avail));
  ImGui::Spacing();
  draw_deltas(*cm);
}

MPK_STUDIO_PANEL(compare, "Compare", 30, draw_compare_panel);

}  // namespace mpk::studio
