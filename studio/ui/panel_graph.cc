// The graph view: the current run's operator graph laid out by Graphviz dot (operators,
// or layers with the operators outside them), layers expandable into their tasks. The
// layout runs in the background (GraphModel); meanwhile the last layout stays on screen
// with "laying out...". Wheel zooms at the cursor, drag pans; a click selects a node and
// highlights its tasks on the timeline (StudioState::highlighted_tasks); a double click
// expands a layer or collapses an expanded one.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "imgui.h"
#include "studio/ui/colors.h"
#include "studio/model/panel_registry.h"
#include "studio/ui/panels.h"

namespace mpk::studio {
namespace {

constexpr ImU32 kLayerColor = IM_COL32(84, 110, 122, 255);
constexpr ImU32 kEventColor = IM_COL32(176, 176, 176, 255);

ImU32 node_color(const TraceModel& m, const GraphNode& n) {
  if (n.kind == NodeKind::kLayer) return kLayerColor;
  if (n.kind == NodeKind::kEvent) return kEventColor;
  const std::vector<Operator>& ops = m.graph().program.ops;
  return n.op >= 0 && static_cast<size_t>(n.op) < ops.size() ? kind_color(ops[n.op].kind) : kLayerColor;
}

void set_expanded(StudioState& s, int32_t layer, bool on) {
  std::vector<int32_t>& e = s.graph.expanded;
  auto it = std::lower_bound(e.begin(), e.end(), layer);
  const bool has = it != e.end() && *it == layer;
  if (on && !has) e.insert(it, layer);
  if (!on && has) e.erase(it);
}

void select_node(StudioState& s, int32_t index) {
  GraphViewState& v = s.graph;
  v.selected = index;
  s.highlighted_tasks.clear();
  if (index < 0 || !v.shown) return;
  s.highlighted_tasks = v.shown->nodes[static_cast<size_t>(index)].tasks;
  std::sort(s.highlighted_tasks.begin(), s.highlighted_tasks.end());
}

// A double click (or the toolbar's button) on a node: expand its layer, or collapse
// the layer of an expanded task.
void toggle_layer_of(StudioState& s, const GraphNode& n) {
  if (n.layer < 0 || n.kind == NodeKind::kEvent) return;
  set_expanded(s, n.layer, n.kind != NodeKind::kTask);
}

// Fits the layout into the canvas: the expanded tasks when there are some, else the
// whole graph; a graph too tall to read at once is shown from the top, at full width.
void fit_view(GraphViewState& v) {
  const GraphLayout& g = *v.shown;
  double x0 = 0, y0 = 0, x1 = g.width, y1 = g.height;
  bool tasks = false;
  for (const GraphNode& n : g.nodes) {
    if (n.kind != NodeKind::kTask) continue;
    if (!tasks) {
      x0 = y0 = 1e300;
      x1 = y1 = -1e300;
      tasks = true;
    }
    x0 = std::min(x0, n.x - n.width / 2);
    x1 = std::max(x1, n.x + n.width / 2);
    y0 = std::min(y0, n.y - n.height / 2);
    y1 = std::max(y1, n.y + n.height / 2);
  }
  const double pad = 16;
  const double cw = std::max(1.0f, v.canvas_width) - 2 * pad, ch = std::max(1.0f, v.canvas_height) - 2 * pad;
  const double w = std::max(1.0, x1 - x0), h = std::max(1.0, y1 - y0);
  double scale = std::min(cw / w, ch / h);
  bool from_top = false;
  if (!tasks && scale < 0.8) {
    scale = std::min(1.0, cw / w);
    from_top = h * scale > ch;
  }
  scale = std::clamp(scale, 0.02, 1.25);
  v.scale = static_cast<float>(scale);
  v.origin_x = static_cast<float>(v.canvas_x0 + pad + 0.5 * (cw - w * scale) - x0 * scale);
  v.origin_y = static_cast<float>(from_top ? v.canvas_y0 + pad - y0 * scale
                                           : v.canvas_y0 + pad + 0.5 * (ch - h * scale) - y0 * scale);
}

int32_t node_at(const GraphViewState& v, ImVec2 p) {
  if (!v.shown) return -1;
  const double gx = (p.x - v.origin_x) / v.scale, gy = (p.y - v.origin_y) / v.scale;
  const double slack = 3.0 / v.scale;  // small nodes are easier to hit
  for (size_t i = 0; i < v.shown->nodes.size(); ++i) {
    const GraphNode& n = v.shown->nodes[i];
    if (std::fabs(gx - n.x) <= n.width / 2 + slack && std::fabs(gy - n.y) <= n.height / 2 + slack)
      return static_cast<int32_t>(i);
  }
  return -1;
}

std::string plural(size_t n, const char* what) {
  return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
}

std::string describe_node(const StudioState& s, const GraphNode& n) {
  const Module& m = s.model->graph();
  std::string first = n.label.substr(0, n.label.find('\n'));
  switch (n.kind) {
    case NodeKind::kLayer:
      return first + ": " + plural(n.tasks.size(), "task") + "\nclick: highlight them on the timeline\ndouble click: expand into tasks";
    case NodeKind::kOp:
      return first + " (" + std::string(name_of(m.program.ops[n.op].kind)) + "), " + plural(n.tasks.size(), "task") +
             "\nclick: highlight them on the timeline" + (n.layer >= 0 ? "\ndouble click: expand layer " + std::to_string(n.layer) : "");
    case NodeKind::kTask: {
      const Task& t = m.graph.tasks[n.tasks.front()];
      char buf[160];
      std::snprintf(buf, sizeof buf, "%s %s: task %d (%s), %lld bytes\ndouble click: collapse layer %d",
                    m.program.ops[n.op].name.c_str(), first.c_str(), n.tasks.front(),
                    std::string(name_of(t.kind)).c_str(), static_cast<long long>(t.bytes), n.layer);
      return buf;
    }
    case NodeKind::kEvent:
      return "an event: every producer above feeds every consumer below";
  }
  return first;
}

void draw_toolbar(StudioState& s) {
  GraphViewState& v = s.graph;
  int mode = v.mode == GraphMode::kOps ? 0 : 1;
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("Nodes:");
  ImGui::SameLine();
  bool changed = ImGui::RadioButton("layers", &mode, 1);
  ImGui::SameLine();
  changed |= ImGui::RadioButton("operators", &mode, 0);
  if (changed) v.mode = mode == 0 ? GraphMode::kOps : GraphMode::kLayers;
  for (int32_t layer : std::vector<int32_t>(v.expanded)) {
    ImGui::SameLine();
    char label[48];
    std::snprintf(label, sizeof label, "layer %d x##collapse%d", layer, layer);
    if (ImGui::SmallButton(label)) set_expanded(s, layer, false);
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("Collapse layer %d", layer);
  }
  if (v.shown && v.selected >= 0) {
    const GraphNode& n = v.shown->nodes[static_cast<size_t>(v.selected)];
    if (n.layer >= 0 && n.kind != NodeKind::kEvent) {
      ImGui::SameLine();
      char label[48];
      std::snprintf(label, sizeof label, n.kind == NodeKind::kTask ? "Collapse layer %d" : "Expand layer %d", n.layer);
      if (ImGui::SmallButton(label)) toggle_layer_of(s, n);
    }
  }
  ImGui::SameLine();
  if (ImGui::SmallButton("Fit")) v.fit_pending = true;
  if (!s.highlighted_tasks.empty()) {
    ImGui::SameLine();
    ImGui::TextDisabled("| %s highlighted on the timeline", plural(s.highlighted_tasks.size(), "task").c_str());
    ImGui::SameLine();
    if (ImGui::SmallButton("Clear")) select_node(s, -1);
  }
  ImGui::SameLine();
  if (!v.error.empty()) {
    ImGui::TextColored(ImVec4(1.0f, 0.45f, 0.4f, 1.0f), "%s", v.error.c_str());
  } else if (v.pending) {
    ImGui::TextColored(ImVec4(1.0f, 0.85f, 0.3f, 1.0f), "laying out...");
  } else if (v.shown) {
    ImGui::TextDisabled("| %s, %s; dot took %.1f ms", plural(v.shown->nodes.size(), "node").c_str(),
                        plural(v.shown->edges.size(), "edge").c_str(), 1e3 * v.shown->layout_seconds);
  }
}

// Text centred at (cx, cy) at `size` pixels, one line per '\n'.
void centred_text(ImDrawList* dl, float size, float cx, float cy, ImU32 color, const std::string& text) {
  ImFont* font = ImGui::GetFont();
  const float line = size;
  size_t lines = 1 + static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
  float y = cy - 0.5f * line * static_cast<float>(lines);
  size_t begin = 0;
  while (begin <= text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    const char* b = text.c_str() + begin;
    const char* e = text.c_str() + end;
    const float w = font->CalcTextSizeA(size, 1e9f, 0, b, e).x;
    dl->AddText(font, size, ImVec2(cx - 0.5f * w, y), color, b, e);
    y += line;
    begin = end + 1;
  }
}

void draw_graph(StudioState& s, ImDrawList* dl) {
  const GraphViewState& v = s.graph;
  const GraphLayout& g = *v.shown;
  const TraceModel& m = *s.model;
  const float sc = v.scale;
  auto sx = [&](double x) { return v.origin_x + static_cast<float>(x) * sc; };
  auto sy = [&](double y) { return v.origin_y + static_cast<float>(y) * sc; };
  const ImVec2 c0(v.canvas_x0, v.canvas_y0), c1(v.canvas_x0 + v.canvas_width, v.canvas_y0 + v.canvas_height);
  auto visible = [&](float x0, float y0, float x1, float y1) {
    return x1 >= c0.x && x0 <= c1.x && y1 >= c0.y && y0 <= c1.y;
  };
  const float font_px = 13.0f * std::min(sc, 1.5f);
  const ImU32 text = IM_COL32(240, 240, 240, 255);

  for (const GraphCluster& c : g.clusters) {
    const float x0 = sx(c.x0), y0 = sy(c.y0), x1 = sx(c.x1), y1 = sy(c.y1);
    if (!visible(x0, y0, x1, y1)) continue;
    dl->AddRectFilled(ImVec2(x0, y0), ImVec2(x1, y1), IM_COL32(255, 255, 255, 10), 4);
    dl->AddRect(ImVec2(x0, y0), ImVec2(x1, y1), IM_COL32(255, 255, 255, 60), 4);
    // The operator's name in the room dot left at the frame's top, cut to the frame;
    // none when zoomed out too far to read it.
    if (font_px < 7.0f) continue;
    dl->PushClipRect(ImVec2(x0, y0), ImVec2(x1, y1), true);
    dl->AddText(ImGui::GetFont(), font_px, ImVec2(x0 + 4 * sc, y0 + 2 * sc), IM_COL32(220, 220, 220, 255),
                c.label.c_str());
    dl->PopClipRect();
  }

  const int32_t focus = v.hovered >= 0 ? v.hovered : v.selected;
  for (const GraphEdge& e : g.edges) {
    if (e.points.size() < 8) continue;
    float x0 = 1e30f, y0 = 1e30f, x1 = -1e30f, y1 = -1e30f;
    for (size_t i = 0; i + 1 < e.points.size(); i += 2) {
      x0 = std::min(x0, sx(e.points[i]));
      x1 = std::max(x1, sx(e.points[i]));
      y0 = std::min(y0, sy(e.points[i + 1]));
      y1 = std::max(y1, sy(e.points[i + 1]));
    }
    x0 = std::min(x0, sx(e.head_x));
    x1 = std::max(x1, sx(e.head_x));
    y1 = std::max(y1, sy(e.head_y));
    if (!visible(x0, y0, x1, y1)) continue;
    const bool lit = focus >= 0 && (e.from == focus || e.to == focus);
    const ImU32 col = lit ? IM_COL32(255, 230, 120, 255) : IM_COL32(170, 180, 190, 150);
    const float thick = lit ? 2.0f : 1.0f;
    auto pt = [&](size_t k) { return ImVec2(sx(e.points[2 * k]), sy(e.points[2 * k + 1])); };
    const size_t n = e.points.size() / 2;
    for (size_t k = 0; k + 3 < n; k += 3) dl->AddBezierCubic(pt(k), pt(k + 1), pt(k + 2), pt(k + 3), col, thick);
    // The arrow head from the spline's end to the tip.
    const ImVec2 end = pt(n - 1), tip(sx(e.head_x), sy(e.head_y));
    float dx = tip.x - end.x, dy = tip.y - end.y;
    const float len = std::sqrt(dx * dx + dy * dy);
    if (len > 0.5f) {
      dx /= len;
      dy /= len;
      const float w = 0.45f * len;
      dl->AddTriangleFilled(tip, ImVec2(end.x - dy * w, end.y + dx * w), ImVec2(end.x + dy * w, end.y - dx * w), col);
    }
  }

  const bool labels = font_px >= 7.0f;
  int64_t drawn = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const GraphNode& n = g.nodes[i];
    const float hw = static_cast<float>(n.width) * 0.5f * sc, hh = static_cast<float>(n.height) * 0.5f * sc;
    const float cx = sx(n.x), cy = sy(n.y);
    if (!visible(cx - hw, cy - hh, cx + hw, cy + hh)) continue;
    ++drawn;
    const ImU32 color = node_color(m, n);
    const bool selected = static_cast<int32_t>(i) == v.selected, hovered = static_cast<int32_t>(i) == v.hovered;
    if (n.kind == NodeKind::kEvent) {
      dl->AddCircleFilled(ImVec2(cx, cy), std::max(2.0f, hw), hovered ? text : color);
      continue;
    }
    const ImVec2 a(cx - hw, cy - hh), b(cx + hw, cy + hh);
    const float round = std::min(4.0f, hh);
    dl->AddRectFilled(a, b, darken(color, hovered ? 0.75f : 0.5f), round);
    dl->AddRect(a, b, selected ? IM_COL32(255, 255, 255, 255) : color, round, 0, selected ? 3.0f : 1.0f);
    if (labels) centred_text(dl, font_px, cx, cy, text, n.label);
  }
  s.graph.nodes_drawn = drawn;
}

void handle_input(StudioState& s, bool hovered) {
  GraphViewState& v = s.graph;
  const ImGuiIO& io = ImGui::GetIO();
  if (hovered && io.MouseWheel != 0) {
    const float k = std::pow(1.2f, io.MouseWheel);
    const float scale = std::clamp(v.scale * k, 0.02f, 4.0f);
    const float f = scale / v.scale;
    v.origin_x = io.MousePos.x - (io.MousePos.x - v.origin_x) * f;
    v.origin_y = io.MousePos.y - (io.MousePos.y - v.origin_y) * f;
    v.scale = scale;
  }
  if (ImGui::IsItemActivated()) v.drag_active = false;
  if (ImGui::IsItemActive() && ImGui::IsMouseDragging(ImGuiMouseButton_Left, 3.0f)) {
    v.drag_active = true;
    v.origin_x += io.MouseDelta.x;
    v.origin_y += io.MouseDelta.y;
  }
  v.hovered = hovered && !v.drag_active ? node_at(v, io.MousePos) : -1;
  if (ImGui::IsItemDeactivated() && !v.drag_active) select_node(s, node_at(v, io.MousePos));
  if (hovered && ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left) && v.hovered >= 0)
    toggle_layer_of(s, v.shown->nodes[static_cast<size_t>(v.hovered)]);
  if (v.hovered >= 0) ImGui::SetTooltip("%s", describe_node(s, v.shown->nodes[static_cast<size_t>(v.hovered)]).c_str());
}

}  // namespace

static void draw_graph_panel(StudioState& s) {
  if (!s.model || !s.reader) {
    ImGui::TextDisabled("No run is open.");
    return;
  }
  GraphViewState& v = s.graph;
  const int64_t graph = s.model->run().graph;
  // Another file, or a run of another graph: its layers and tasks are not this one's.
  const bool other_file = v.layouts && v.trace_path != s.trace_path;
  if (other_file || (v.shown && v.shown->key.graph != graph)) {
    v.shown = nullptr;
    v.expanded.clear();
    select_node(s, -1);
  }
  if (!v.layouts || other_file) v.layouts = std::make_shared<GraphModel>(s.trace_path);
  v.trace_path = s.trace_path;
  const GraphModel::Result r = v.layouts->request(s.run, GraphKey{graph, v.mode, v.expanded});
  v.pending = r.pending;
  v.error = r.error;
  if (r.layout && r.layout != v.shown) {
    // Keep the selection on the node with the same tasks, if the new layout has one.
    const std::vector<TaskId> was = v.shown && v.selected >= 0 ? v.shown->nodes[static_cast<size_t>(v.selected)].tasks
                                                              : std::vector<TaskId>{};
    v.shown = r.layout;
    v.selected = -1;
    v.hovered = -1;
    for (size_t i = 0; i < v.shown->nodes.size() && !was.empty(); ++i)
      if (v.shown->nodes[i].tasks == was) v.selected = static_cast<int32_t>(i);
    v.fit_pending = true;
  }
  // Pending counts even when its job finished since request(): this frame did not draw it.
  const auto jobs = static_cast<int32_t>(v.layouts->jobs_in_flight());
  s.background_jobs = v.pending ? std::max<int32_t>(1, jobs) : jobs;

  draw_toolbar(s);
  const ImVec2 p = ImGui::GetCursorScreenPos();
  const ImVec2 size(std::max(ImGui::GetContentRegionAvail().x, 50.0f), std::max(ImGui::GetContentRegionAvail().y, 50.0f));
  v.canvas_x0 = p.x;
  v.canvas_y0 = p.y;
  v.canvas_width = size.x;
  v.canvas_height = size.y;
  ImGui::InvisibleButton("##graph", size);
  const bool hovered = ImGui::IsItemHovered();
  ImDrawList* dl = ImGui::GetWindowDrawList();
  dl->PushClipRect(p, ImVec2(p.x + size.x, p.y + size.y), true);
  dl->AddRectFilled(p, ImVec2(p.x + size.x, p.y + size.y), IM_COL32(0, 0, 0, 40));
  if (v.shown) {
    if (v.fit_pending) {
      fit_view(v);
      v.fit_pending = false;
    }
    handle_input(s, hovered);
    draw_graph(s, dl);
  }
  if (v.pending) {
    const char* msg = "laying out...";
    const ImVec2 ts = ImGui::CalcTextSize(msg);
    const ImVec2 at(p.x + 0.5f * (size.x - ts.x), p.y + 0.5f * (size.y - ts.y));
    dl->AddRectFilled(ImVec2(at.x - 10, at.y - 6), ImVec2(at.x + ts.x + 10, at.y + ts.y + 6), IM_COL32(30, 30, 30, 220), 4);
    dl->AddText(at, IM_COL32(255, 220, 80, 255), msg);
  }
  dl->PopClipRect();
}

MPK_STUDIO_PANEL(graph, "Graph", 40, draw_graph_panel);

}  // namespace mpk::studio
