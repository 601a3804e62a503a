// The timeline's search, filter, zoom-to and edit-mode widgets, and range export.
#include "studio/ui/timeline_nav.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <tuple>

#include "imgui.h"
#include "imgui_stdlib.h"
#include "ir/error.h"
#include "studio/ui/colors.h"
#include "studio/model/navigation.h"
#include "studio/model/timeline_layout.h"
#include "traces/chrome_export.h"

namespace mpk::studio {
namespace {

struct ExportRequest {
  bool open = false;
  ExportFormat format = ExportFormat::kCsv;
  std::string path;
};

// The range to export: the picked one, else the visible window, within the run.
TimeWindow export_window(const StudioState& s) {
  TimeWindow w = s.range ? *s.range : s.window;
  w.t0_ns = std::max(0.0, w.t0_ns);
  w.t1_ns = std::min(static_cast<double>(s.model->duration_ns()), w.t1_ns);
  return w;
}

void draw_filter_popup(StudioState& s) {
  ViewFilter& f = s.timeline.filter;
  const TraceModel& m = *s.model;
  int32_t layers = 0;
  for (const Operator& op : m.graph().program.ops) layers = std::max(layers, op.layer + 1);
  ImGui::TextUnformatted("Show at full colour (the rest is dimmed):");
  ImGui::SetNextItemWidth(200);
  ImGui::SliderInt("layer (-1: all)", &f.layer, -1, std::max(layers - 1, -1));
  ImGui::SetNextItemWidth(200);
  ImGui::SliderInt("step (-1: all)", &f.step, -1, std::max(m.num_steps() - 1, -1));
  bool present[kNumOpKinds] = {};
  for (const Operator& op : m.graph().program.ops) present[static_cast<size_t>(op.kind)] = true;
  for (int k = 0; k < kNumOpKinds; ++k) {
    if (!present[k]) continue;
    bool on = (f.kinds >> k) & 1u;
    ImGui::PushStyleColor(ImGuiCol_CheckMark, ImGui::ColorConvertU32ToFloat4(kind_color(static_cast<OpKind>(k))));
    if (ImGui::Checkbox(std::string(name_of(static_cast<OpKind>(k))).c_str(), &on)) f.kinds = on ? f.kinds | (1u << k) : f.kinds & ~(1u << k);
    ImGui::PopStyleColor();
  }
  if (ImGui::Button("Show all")) f = ViewFilter{};
}

}  // namespace

bool step_search(StudioState& s, bool forward) {
  TimelineState& tl = s.timeline;
  if (!s.model) return false;
  if (tl.searched != tl.search || tl.search_model != s.model.get()) {
    tl.matches = search_executions(*s.model, tl.search);
    tl.searched = tl.search;
    tl.search_model = s.model.get();
  }
  const int64_t x = next_match(*s.model, tl.matches, s.selection.exec, forward);
  if (x < 0) {
    set_status(s, tl.search.empty() ? "type an operator or task to find" : "nothing matches '" + tl.search + "'", !tl.search.empty());
    return false;
  }
  select_execution(s, x);
  show_execution(s, x);
  return true;
}

bool zoom_to(StudioState& s) {
  const std::optional<TimeWindow> w = zoom_target(s);
  if (!w) return false;
  s.window = *w;
  if (s.selection.exec >= 0 && !s.range) s.timeline.scroll_to_worker = s.model->execution(s.selection.exec).worker;
  return true;
}

void draw_navigation_bar(StudioState& s) {
  TimelineState& tl = s.timeline;
  ImGui::SetNextItemWidth(220);
  const bool enter = ImGui::InputTextWithHint("##find", "find an operator or task (Enter, F3)", &tl.search,
                                              ImGuiInputTextFlags_EnterReturnsTrue);
  if (enter) step_search(s, !ImGui::GetIO().KeyShift);
  ImGui::SameLine();
  if (ImGui::ArrowButton("##prev", ImGuiDir_Left)) step_search(s, false);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("previous instance (Shift+F3)");
  ImGui::SameLine();
  if (ImGui::ArrowButton("##next", ImGuiDir_Right)) step_search(s, true);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("next instance (F3)");
  if (tl.searched == tl.search && tl.search_model == s.model.get() && !tl.search.empty()) {
    ImGui::SameLine();
    const auto at = std::find(tl.matches.begin(), tl.matches.end(), s.selection.exec);
    if (at == tl.matches.end())
      ImGui::TextDisabled("%zu found", tl.matches.size());
    else
      ImGui::TextDisabled("%lld of %zu", static_cast<long long>(at - tl.matches.begin() + 1), tl.matches.size());
  }
  ImGui::SameLine();
  if (ImGui::Button(tl.filter.active() ? "Filter (on)" : "Filter")) ImGui::OpenPopup("filter");
  if (ImGui::BeginPopup("filter")) {
    draw_filter_popup(s);
    ImGui::EndPopup();
  }
  ImGui::SameLine();
  ImGui::BeginDisabled(!zoom_target(s));
  if (ImGui::Button("Zoom to")) zoom_to(s);
  ImGui::EndDisabled();
  if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
    ImGui::SetTooltip("Z: the picked range, else the why-idle walk, else the selected task");
  ImGui::SameLine();
  ImGui::Checkbox("edit", &tl.edit_mode);
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("E: a drag on a task moves it (also Ctrl+drag or Alt+drag, edit mode or not)");
}

bool export_range(StudioState& s, const std::string& path, ExportFormat format) {
  if (!s.model || !s.reader) return false;
  const TimeWindow w = export_window(s);
  try {
    std::ofstream out(path, std::ios::binary);
    if (!out) throw Error("cannot write " + path);
    std::string what;
    if (format == ExportFormat::kCsv) {
      export_range_csv(*s.model, w.t0_ns, w.t1_ns, out);
      what = "executions as CSV";
    } else {
      ChromeExportOptions o;
      o.t0_ns = static_cast<int64_t>(w.t0_ns);
      o.t1_ns = static_cast<int64_t>(std::ceil(w.t1_ns));
      const ChromeExportStats st = export_chrome_trace(*s.reader, s.run, out, o);
      what = std::to_string(st.slices) + " slices as Chrome JSON";
    }
    out.close();
    if (!out) throw Error("cannot write " + path);
    set_status(s, "wrote " + format_duration(w.t0_ns) + " to " + format_duration(w.t1_ns) + ": " + what + " to " + path);
    return true;
  } catch (const Error& e) {
    set_status(s, e.what(), true);
    return false;
  }
}

void export_menu_items(StudioState& s) {
  ExportRequest& r = panel_state<ExportRequest>(s);
  const bool can = s.model != nullptr;
  const char* what = s.range ? "the range" : "the visible window";
  char csv[64], json[64];
  std::snprintf(csv, sizeof csv, "Export %s as CSV...", what);
  std::snprintf(json, sizeof json, "Export %s as Chrome JSON...", what);
  for (const auto& [label, format, ext] : {std::tuple{csv, ExportFormat::kCsv, ".csv"},
                                           std::tuple{json, ExportFormat::kChromeJson, ".json"}})
    if (ImGui::MenuItem(label, nullptr, false, can)) {
      r.open = true;
      r.format = format;
      r.path = s.trace_path.substr(0, s.trace_path.rfind('.')) + "-range" + ext;
    }
}

void draw_export_popup(StudioState& s) {
  ExportRequest& r = panel_state<ExportRequest>(s);
  if (r.open) {
    ImGui::OpenPopup("Export");
    r.open = false;
  }
  if (!ImGui::BeginPopupModal("Export", nullptr, ImGuiWindowFlags_AlwaysAutoResize)) return;
  ImGui::Text("Write %s to:", r.format == ExportFormat::kCsv ? "CSV" : "Chrome trace JSON (Perfetto, chrome://tracing)");
  ImGui::SetNextItemWidth(480);
  if (ImGui::IsWindowAppearing()) ImGui::SetKeyboardFocusHere();
  const bool enter = ImGui::InputText("##path", &r.path, ImGuiInputTextFlags_EnterReturnsTrue);
  if (ImGui::Button("Write") || enter) {
    export_range(s, r.path, r.format);
    ImGui::CloseCurrentPopup();
  }
  ImGui::SameLine();
  if (ImGui::Button("Cancel")) ImGui::CloseCurrentPopup();
  ImGui::EndPopup();
}

}  // namespace mpk::studio
