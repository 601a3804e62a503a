// The run list: one table row per run of the open trace.db (id, kind, model, policy,
// steps, makespan per step, executions, device; where the file holds a tensor-parallel
// launch, each run's rank: "1/4"). Clicking a row makes it the current run (one rank of a
// launch: the interactive one, the others shown under it); the context menu (right click)
// picks it as the run to compare against, or opens another rank of its launch.
#include <algorithm>
#include <cstdio>
#include <string>

#include "imgui.h"
#include "studio/ui/panels.h"
#include "studio/model/timeline_layout.h"

namespace mpk::studio {

void draw_runs_panel(StudioState& s) {
  if (!s.reader) {
    ImGui::TextDisabled("No trace is open.");
    return;
  }
  const ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV |
                                ImGuiTableFlags_ScrollY | ImGuiTableFlags_Resizable |
                                ImGuiTableFlags_SizingStretchProp;
  const float row_h = ImGui::GetTextLineHeightWithSpacing();
  const float height = row_h * static_cast<float>(std::min<size_t>(s.runs.size(), 5) + 1) + 6;
  // The rank column only where there are ranks: a file of single-rank runs looks as it did.
  const bool ranked = std::any_of(s.runs.begin(), s.runs.end(), [](const RunRecord& r) { return r.ranks > 1; });
  if (!ImGui::BeginTable("runs", ranked ? 9 : 8, flags, ImVec2(0, height))) return;
  ImGui::TableSetupScrollFreeze(0, 1);
  ImGui::TableSetupColumn("run", ImGuiTableColumnFlags_WidthFixed, 48);
  ImGui::TableSetupColumn("kind", ImGuiTableColumnFlags_WidthFixed, 40);
  if (ranked) ImGui::TableSetupColumn("rank", ImGuiTableColumnFlags_WidthFixed, 40);
  ImGui::TableSetupColumn("model", ImGuiTableColumnFlags_WidthStretch, 3);
  ImGui::TableSetupColumn("policy", ImGuiTableColumnFlags_WidthStretch, 2);
  ImGui::TableSetupColumn("steps", ImGuiTableColumnFlags_WidthFixed, 48);
  ImGui::TableSetupColumn("makespan/step", ImGuiTableColumnFlags_WidthFixed, 100);
  ImGui::TableSetupColumn("executions", ImGuiTableColumnFlags_WidthFixed, 84);
  ImGui::TableSetupColumn("device", ImGuiTableColumnFlags_WidthStretch, 2);
  ImGui::TableHeadersRow();
  int64_t clicked = -1;
  s.run_row_y.clear();
  for (const RunRecord& r : s.runs) {
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    s.run_row_y.push_back(ImGui::GetCursorScreenPos().y + ImGui::GetTextLineHeight() / 2);
    char id[48];
    std::snprintf(id, sizeof id, "%lld%s##run%lld", static_cast<long long>(r.id),
                  r.id != s.compare_run ? "" : s.compare_current_is_b ? " (A)" : " (B)", static_cast<long long>(r.id));
    if (ImGui::Selectable(id, r.id == s.run, ImGuiSelectableFlags_SpanAllColumns)) clicked = r.id;
    if (ImGui::BeginPopupContextItem()) {
      if (ImGui::MenuItem("Open this run", nullptr, false, r.id != s.run)) clicked = r.id;
      if (ImGui::MenuItem("Compare with the current run", nullptr, r.id == s.compare_run,
                          r.id != s.run)) {
        s.compare_run = r.id;
        s.compare_current_is_b = false;
      }
      for (const RunRecord& other : s.runs)
        if (other.ranks > 1 && other.id != r.id && launch_of(other) == launch_of(r)) {
          const std::string item = "Open rank " + std::to_string(other.rank) + " of this launch (run " +
                                   std::to_string(other.id) + ")";
          if (ImGui::MenuItem(item.c_str(), nullptr, false, other.id != s.run)) clicked = other.id;
        }
      ImGui::EndPopup();
    }
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(r.kind.c_str());
    if (ranked) {
      ImGui::TableNextColumn();
      if (r.ranks > 1) ImGui::Text("%d/%d", r.rank, r.ranks);
    }
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(r.model.c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(r.policy.c_str());
    ImGui::TableNextColumn();
    ImGui::Text("%lld", static_cast<long long>(r.steps));
    ImGui::TableNextColumn();
    const double per_step = r.steps > 0 ? static_cast<double>(r.duration_ns) / static_cast<double>(r.steps) : 0.0;
    ImGui::TextUnformatted(format_duration(per_step).c_str());
    ImGui::TableNextColumn();
    ImGui::Text("%lld", static_cast<long long>(r.num_executions));
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(r.device.name.c_str());
  }
  ImGui::EndTable();
  if (clicked >= 0 && clicked != s.run) select_run(s, clicked);
}

}  // namespace mpk::studio
