// The busy-SM strip and the bandwidth lane, drawn (studio/ui/timeline_lanes.h).
#include "studio/ui/timeline_lanes.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>

#include "studio/model/lanes.h"

namespace mpk::studio {
namespace {

// Blue (few busy) to white (all busy).
ImU32 busy_colour(float f) {
  const auto c = [f](float lo, float hi) { return static_cast<int>(lo + (hi - lo) * f); };
  return IM_COL32(c(20, 235), c(40, 245), c(80, 255), 255);
}

void draw_strip(StudioState& s, const TimeAxis& axis, ImVec2 a, ImVec2 b) {
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const TraceModel& m = *s.model;
  const int columns = std::max(1, static_cast<int>(b.x - a.x));
  TimelineState& tl = s.timeline;
  if (tl.strip_for != s.model.get() || static_cast<int>(tl.strip.size()) != columns) {
    tl.strip = busy_strip(m, columns);
    tl.strip_for = s.model.get();
  }
  tl.strip_x0 = a.x;
  tl.strip_x1 = b.x;
  tl.strip_y = 0.5f * (a.y + b.y);
  dl->AddRectFilled(a, b, IM_COL32(15, 18, 24, 255));
  for (int x = 0; x < columns; ++x) {
    const float f = tl.strip[static_cast<size_t>(x)];
    dl->AddRectFilled(ImVec2(a.x + static_cast<float>(x), b.y - (b.y - a.y) * f), ImVec2(a.x + static_cast<float>(x) + 1, b.y),
                      busy_colour(f));
  }
  // The window, on the strip's whole-run scale.
  const double d = std::max<double>(1.0, static_cast<double>(m.duration_ns()));
  const float wx0 = a.x + static_cast<float>(std::clamp(axis.t0_ns / d, 0.0, 1.0)) * (b.x - a.x);
  const float wx1 = a.x + static_cast<float>(std::clamp(axis.t1_ns() / d, 0.0, 1.0)) * (b.x - a.x);
  dl->AddRect(ImVec2(wx0, a.y), ImVec2(std::max(wx1, wx0 + 2), b.y), IM_COL32(255, 255, 255, 200), 0, 0, 1.5f);
  // Click or drag: the window's centre goes there.
  const ImGuiIO& io = ImGui::GetIO();
  const bool over = ImGui::IsWindowHovered(ImGuiHoveredFlags_ChildWindows) && ImGui::IsMouseHoveringRect(a, b);
  if (over && ImGui::IsMouseClicked(ImGuiMouseButton_Left)) tl.strip_drag = true;
  if (!ImGui::IsMouseDown(ImGuiMouseButton_Left)) tl.strip_drag = false;
  if (tl.strip_drag) {
    const double t = std::clamp((io.MousePos.x - a.x) / (b.x - a.x), 0.0f, 1.0f) * d;
    const double span = s.window.span();
    s.window = {t - span / 2, t + span / 2};
  }
  if (over) {
    const int x = std::clamp(static_cast<int>(io.MousePos.x - a.x), 0, columns - 1);
    ImGui::SetTooltip("%s: %.0f %% of the workers busy (%.1f of %d)\nclick or drag to move the window here",
                      format_duration(d * (x + 0.5) / columns).c_str(), 100.0 * tl.strip[static_cast<size_t>(x)],
                      tl.strip[static_cast<size_t>(x)] * m.num_workers(), m.num_workers());
  }
}

void draw_bandwidth(StudioState& s, const TimeAxis& axis, ImVec2 a, ImVec2 b) {
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const TraceModel& m = *s.model;
  const int columns = std::max(1, static_cast<int>(b.x - axis.x0));
  TimelineState& tl = s.timeline;
  const std::array<double, 3> key = {axis.t0_ns, axis.ns_per_px, static_cast<double>(columns)};
  if (tl.lane_for != s.model.get() || tl.lane_key != key) {  // a new window: compute it again
    tl.lane = bandwidth_lane(m, axis, columns);
    tl.lane_for = s.model.get();
    tl.lane_key = key;
  }
  const std::vector<float>& lane = tl.lane;
  const double floor = bandwidth_floor(m);
  const float peak = lane.empty() ? 0.0f : *std::max_element(lane.begin(), lane.end());
  const double top = std::max<double>(1.15 * floor, peak);  // GB/s at the lane's top
  dl->AddRectFilled(a, b, IM_COL32(15, 18, 24, 255));
  if (top <= 0) return;
  const float h = b.y - a.y;
  for (int x = 0; x < columns; ++x) {
    const float v = lane[static_cast<size_t>(x)];
    if (v <= 0) continue;
    const float y = b.y - h * static_cast<float>(std::min(1.0, v / top));
    // Near the floor: green; far under it (latency-bound): orange.
    const bool streaming = floor > 0 && v >= 0.6 * floor;
    dl->AddRectFilled(ImVec2(axis.x0 + static_cast<float>(x), y), ImVec2(axis.x0 + static_cast<float>(x) + 1, b.y),
                      streaming ? IM_COL32(102, 187, 106, 220) : IM_COL32(255, 167, 38, 200));
  }
  char label[96];
  if (floor > 0) {
    const float fy = b.y - h * static_cast<float>(floor / top);
    dl->AddLine(ImVec2(axis.x0, fy), ImVec2(b.x, fy), IM_COL32(239, 83, 80, 220), 1.0f);
    std::snprintf(label, sizeof label, "floor %.2f TB/s", floor * 1e-3);
    const ImVec2 size = ImGui::CalcTextSize(label);
    dl->AddRectFilled(ImVec2(b.x - size.x - 8, a.y), ImVec2(b.x, a.y + size.y), IM_COL32(15, 18, 24, 220));
    dl->AddText(ImVec2(b.x - size.x - 4, a.y), IM_COL32(239, 83, 80, 255), label);
  }
  const ImGuiIO& io = ImGui::GetIO();
  if (ImGui::IsWindowHovered(ImGuiHoveredFlags_ChildWindows) && ImGui::IsMouseHoveringRect(ImVec2(axis.x0, a.y), b)) {
    const int x = std::clamp(static_cast<int>(io.MousePos.x - axis.x0), 0, columns - 1);
    const float v = lane[static_cast<size_t>(x)];
    ImGui::SetTooltip("%s: %.2f TB/s streamed (%.0f bytes a us)%s", format_duration(axis.t_of(axis.x0 + x + 0.5)).c_str(),
                      v * 1e-3, v * 1e3, floor > 0 ? (v >= 0.6 * floor ? ", near the floor" : ", far under the floor") : "");
  }
}

}  // namespace

void draw_timeline_lanes(StudioState& s, const TimeAxis& axis, ImVec2 p0, float width) {
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImU32 text = IM_COL32(150, 150, 150, 255);
  dl->AddText(ImVec2(p0.x + 6, p0.y), text, "busy SMs");
  dl->AddText(ImVec2(p0.x + 6, p0.y + kStripHeight + 10), text, "GB/s");
  draw_strip(s, axis, ImVec2(axis.x0, p0.y + 1), ImVec2(p0.x + width, p0.y + kStripHeight));
  draw_bandwidth(s, axis, ImVec2(axis.x0, p0.y + kStripHeight + 3), ImVec2(p0.x + width, p0.y + kLanesHeight - 1));
}

}  // namespace mpk::studio
