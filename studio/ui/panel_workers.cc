// The workers view: one table row per worker of the current run (over the range picked on
// the timeline, else the whole run): the SM it ran on, its busy share, its idle time by
// cause and the producers it waited for longest; a click on a row shows that worker's
// row on the timeline. Columns sort.
#include <cstdio>
#include <string>

#include "imgui.h"
#include "studio/ui/colors.h"
#include "studio/model/panel_registry.h"
#include "studio/model/timeline_layout.h"
#include "studio/model/worker_model.h"

namespace mpk::studio {
namespace {

constexpr const char* kColumns[kNumWorkerColumns] = {"worker", "SM",        "busy",     "wait",
                                                     "queue_empty", "step_tail", "overhead", "waited longest for"};
constexpr const char* kHelp[kNumWorkerColumns] = {
    "the worker (a row of the timeline); click a row to show it there",
    "the SM its executions ran on",
    "the union of its executions over the range's length",
    "idle: the next task waited on an event",
    "idle: its list for the step was done while other workers still started work",
    "idle: every task of the step had started; the step was draining",
    "idle: a gap with nothing to wait for (dispatch, event release)",
    "the producers whose releases it waited for longest (operator across layers)"};

std::string percent(double f) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %%", 100.0 * f);
  return buf;
}

void refresh(StudioState& s, WorkersViewState& v) {
  int64_t t0 = 0, t1 = 0;
  if (s.range) {
    t0 = static_cast<int64_t>(std::max(0.0, s.range->t0_ns));
    t1 = static_cast<int64_t>(s.range->t1_ns);
  }
  if (v.model == s.model.get() && v.t0 == t0 && v.t1 == t1) return;
  v.model = s.model.get();
  v.t0 = t0;
  v.t1 = t1;
  v.rows = worker_rows(*s.model, t0, t1);
  sort_worker_rows(v.rows, v.column, v.ascending);
}

void draw_workers_panel(StudioState& s) {
  if (!s.model) {
    ImGui::TextDisabled("No run is open.");
    return;
  }
  WorkersViewState& v = panel_state<WorkersViewState>(s);
  refresh(s, v);
  const double length = static_cast<double>(v.t1 > v.t0 ? v.t1 - v.t0 : s.model->duration_ns());
  if (s.range)
    ImGui::Text("Range %s to %s: idle time clipped to it.", format_duration(static_cast<double>(v.t0)).c_str(),
                format_duration(static_cast<double>(v.t1)).c_str());
  else
    ImGui::Text("Whole run: %s, %d workers. Right-drag on the timeline picks a range.",
                format_duration(length).c_str(), s.model->num_workers());
  const ImGuiTableFlags flags = ImGuiTableFlags_Sortable | ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersOuter |
                                ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_Resizable | ImGuiTableFlags_ScrollY |
                                ImGuiTableFlags_SizingStretchProp;
  if (!ImGui::BeginTable("workers", kNumWorkerColumns, flags, ImGui::GetContentRegionAvail())) return;
  ImGui::TableSetupScrollFreeze(0, 1);
  for (int c = 0; c < kNumWorkerColumns; ++c)
    ImGui::TableSetupColumn(kColumns[c], c == 0 ? ImGuiTableColumnFlags_DefaultSort : ImGuiTableColumnFlags_PreferSortDescending,
                            c == kNumWorkerColumns - 1 ? 3.0f : 1.0f, static_cast<ImGuiID>(c));
  ImGui::TableNextRow(ImGuiTableRowFlags_Headers);
  for (int c = 0; c < kNumWorkerColumns; ++c) {
    if (!ImGui::TableSetColumnIndex(c)) continue;
    ImGui::TableHeader(kColumns[c]);
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", kHelp[c]);
  }
  if (ImGuiTableSortSpecs* specs = ImGui::TableGetSortSpecs(); specs && specs->SpecsDirty && specs->SpecsCount > 0) {
    v.column = static_cast<WorkerColumn>(specs->Specs[0].ColumnUserID);
    v.ascending = specs->Specs[0].SortDirection == ImGuiSortDirection_Ascending;
    sort_worker_rows(v.rows, v.column, v.ascending);
    specs->SpecsDirty = false;
  }
  v.row_y.assign(v.rows.size(), -1.0f);
  int32_t clicked = -1;
  ImGuiListClipper clipper;
  clipper.Begin(static_cast<int>(v.rows.size()));
  while (clipper.Step())
    for (int i = clipper.DisplayStart; i < clipper.DisplayEnd; ++i) {
      const WorkerRow& r = v.rows[static_cast<size_t>(i)];
      ImGui::TableNextRow();
      ImGui::TableSetColumnIndex(0);
      v.row_x = ImGui::GetCursorScreenPos().x + 10;
      v.row_y[static_cast<size_t>(r.worker)] = ImGui::GetCursorScreenPos().y + ImGui::GetTextLineHeight() / 2;
      const std::string id = "w" + std::to_string(r.worker) + "##row";
      if (ImGui::Selectable(id.c_str(), false, ImGuiSelectableFlags_SpanAllColumns)) clicked = r.worker;
      ImGui::TableSetColumnIndex(1);
      ImGui::Text("%d", r.sm);
      ImGui::TableSetColumnIndex(2);
      const ImVec2 p = ImGui::GetCursorScreenPos();
      ImGui::GetWindowDrawList()->AddRectFilled(
          ImVec2(p.x, p.y + 2), ImVec2(p.x + ImGui::GetColumnWidth() * static_cast<float>(r.busy), p.y + ImGui::GetTextLineHeight() - 2),
          IM_COL32(66, 133, 244, 90));
      ImGui::TextUnformatted(percent(r.busy).c_str());
      for (int c = 0; c < 4; ++c) {
        ImGui::TableSetColumnIndex(3 + c);
        const int64_t ns = r.idle_ns[static_cast<size_t>(c)];
        if (ns > 0)
          ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(with_alpha(bubble_color(static_cast<BubbleCause>(c)), 255)),
                             "%s", percent(static_cast<double>(ns) / length).c_str());
      }
      ImGui::TableSetColumnIndex(7);
      std::string blamed;
      for (const BlamedProducer& b : r.blamed)
        blamed += (blamed.empty() ? "" : ", ") + b.name + " " + format_duration(static_cast<double>(b.wait_ns));
      ImGui::TextUnformatted(blamed.c_str());
    }
  ImGui::EndTable();
  if (clicked >= 0) {
    s.view = View::kTimeline;
    s.view_changed = true;
    s.timeline.scroll_to_worker = clicked;
  }
}

}  // namespace

MPK_STUDIO_PANEL(workers, "Workers", 25, draw_workers_panel);

}  // namespace mpk::studio
