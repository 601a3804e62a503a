// The selected execution's pane: details, producers and consumers, the why-idle walk.
#include "studio/ui/timeline_details.h"

#include <string>

#include "imgui.h"
#include "studio/ui/colors.h"
#include "studio/model/timeline_layout.h"
#include "studio/model/why_idle.h"

namespace mpk::studio {
namespace {

constexpr size_t kMaxListed = 200;

// One line per dependency; clicking it selects that execution.
void dependency_list(StudioState& s, const char* title, const std::vector<DepLink>& links,
                     const std::function<void(int64_t)>& go_to, int64_t* pick) {
  const TraceModel& m = *s.model;
  ImGui::TextDisabled("%s (%zu)", title, links.size());
  size_t n = 0;
  for (const DepLink& d : links) {
    if (n++ >= kMaxListed) {
      ImGui::TextDisabled("... %zu more", links.size() - kMaxListed);
      break;
    }
    std::string line = m.graph().program.ops[static_cast<size_t>(m.task(d.task).op)].name +
                       " [task " + std::to_string(d.task) + "] step " + std::to_string(d.step) +
                       ", event " + std::to_string(d.event);
    if (d.step_distance) line += " (previous step)";
    if (d.exec >= 0) {
      const Execution& e = m.execution(d.exec);
      line += ", " + m.row_label(e.worker) + ", " + format_duration(static_cast<double>(e.start_ns)) +
              " - " + format_duration(static_cast<double>(e.end_ns));
      ImGui::PushID(static_cast<int>(n));
      if (ImGui::Selectable(line.c_str())) {
        *pick = d.exec;
        go_to(d.exec);
      }
      ImGui::PopID();
    } else {
      ImGui::TextDisabled("%s (not in this run)", line.c_str());
    }
  }
}

}  // namespace

void show_why_idle(StudioState& s) {
  if (!s.model || s.selection.exec < 0) return;
  const WhyIdle w = why_idle(*s.model, s.selection.exec);
  s.selection.why_idle.clear();
  for (const WhyIdleLink& l : w.chain) s.selection.why_idle.push_back(l.exec);
  s.selection.show_why_idle = true;
}

void draw_timeline_details(StudioState& s, const std::function<void(int64_t)>& go_to) {
  const TraceModel& m = *s.model;
  const int64_t sel = s.selection.exec;
  int64_t pick = -1;
  const ImGuiTableFlags flags = ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_Resizable;
  if (!ImGui::BeginTable("details", 3, flags, ImGui::GetContentRegionAvail())) return;
  ImGui::TableSetupColumn("selected", ImGuiTableColumnFlags_WidthStretch, 1.0f);
  ImGui::TableSetupColumn("dependencies", ImGuiTableColumnFlags_WidthStretch, 1.4f);
  ImGui::TableSetupColumn("why idle", ImGuiTableColumnFlags_WidthStretch, 1.6f);
  ImGui::TableNextRow();

  ImGui::TableNextColumn();
  ImGui::BeginChild("sel", ImVec2(0, 0));
  const ImU32 c = kind_color(m.kind_of(m.execution(sel).task));
  ImGui::PushStyleColor(ImGuiCol_Text, c);
  ImGui::TextUnformatted("selected");
  ImGui::PopStyleColor();
  const IndexRange group = m.group_of(sel);
  s.timeline.member_y.clear();
  if (group.size() > 1) {
    // A linear group: every member can be selected (its dependencies differ).
    ImGui::TextDisabled("a linear group of %lld tasks:", static_cast<long long>(group.size()));
    s.timeline.member_x = ImGui::GetCursorScreenPos().x + 20;
    for (int64_t i = group.begin; i < group.end; ++i) {
      s.timeline.member_y.push_back(ImGui::GetCursorScreenPos().y + ImGui::GetTextLineHeight() / 2);
      const Execution& e = m.execution(i);
      const std::string line = m.op_of(e.task).name + " [task " + std::to_string(e.task) + "]";
      ImGui::PushID(static_cast<int>(i - group.begin));
      if (ImGui::Selectable(line.c_str(), i == sel)) pick = i;
      ImGui::PopID();
    }
    ImGui::Separator();
  }
  ImGui::TextWrapped("%s", explain_execution(m, sel).c_str());
  if (ImGui::Button("Why idle?")) show_why_idle(s);
  ImGui::SameLine();
  if (ImGui::Button("Go to")) go_to(sel);
  ImGui::SameLine();
  if (ImGui::Button("Clear")) pick = -2;
  ImGui::EndChild();

  ImGui::TableNextColumn();
  ImGui::BeginChild("deps", ImVec2(0, 0));
  dependency_list(s, "waited for (producers)", m.producers(sel), go_to, &pick);
  ImGui::Spacing();
  dependency_list(s, "released (consumers)", m.consumers(sel), go_to, &pick);
  ImGui::EndChild();

  ImGui::TableNextColumn();
  ImGui::BeginChild("why", ImVec2(0, 0));
  if (!s.selection.show_why_idle) {
    ImGui::TextDisabled("Why idle? walks back from this task: at each step, the producer\n"
                        "it waited for last, or the task before it on its SM when that\n"
                        "ended later, to the start of the step.");
  } else {
    const WhyIdle w = why_idle(m, sel);
    ImGui::Text("critical path into the task: %zu tasks, running %s, waiting %s", w.chain.size(),
                format_duration(static_cast<double>(w.busy_ns)).c_str(),
                format_duration(static_cast<double>(w.gap_ns)).c_str());
    ImGui::TextDisabled("from the task back to the step's start; each line waited for the next");
    for (size_t n = 0; n < w.chain.size(); ++n) {
      const WhyIdleLink& link = w.chain[w.chain.size() - 1 - n];
      const std::string line = std::to_string(n + 1) + ". " + describe(m, link);
      ImGui::PushID(static_cast<int>(n));
      if (ImGui::Selectable(line.c_str(), link.exec == sel)) go_to(link.exec);
      ImGui::PopID();
    }
  }
  ImGui::EndChild();
  ImGui::EndTable();
  if (pick == -2) select_execution(s, -1);
  else if (pick >= 0) select_execution(s, pick);
}

}  // namespace mpk::studio
