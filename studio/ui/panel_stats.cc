// The statistics view: a sortable table of the current run's statistics by operator kind,
// operator (one layer's or across layers) or layer (count, total, mean, p50, p99, share of
// the SM time, idle time before), limited to the time range picked on the timeline when
// there is one, and a histogram of one row's durations with its p50 and p99 marked.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "imgui.h"
#include "studio/ui/colors.h"
#include "studio/model/panel_registry.h"
#include "studio/ui/panels.h"
#include "studio/model/timeline_layout.h"

namespace mpk::studio {
namespace {

constexpr const char* kColumnNames[kNumStatsColumns] = {
    "name", "count", "total", "mean", "p50", "p99", "share", "idle before"};
constexpr const char* kColumnHelp[kNumStatsColumns] = {
    "the operator kind, operator or layer (a linear group is one execution, named after its members)",
    "executions starting in the range",
    "summed durations",
    "mean duration",
    "median duration (nearest rank)",
    "99th percentile duration (nearest rank)",
    "the row's time over the SM time of the range (workers x length)",
    "idle time on the worker right before each of the row's executions, summed"};

// The model of the current run, rebuilt when the run or the file changes; the range
// follows s.range.
StatsModel* stats_model(StudioState& s) {
  StatsViewState& v = s.stats;
  if (!v.model || v.run != s.run || v.trace_path != s.trace_path) {
    v.model = std::make_shared<StatsModel>(*s.model);
    v.run = s.run;
    v.trace_path = s.trace_path;
  }
  if (v.model->grouping() != v.grouping) v.model->set_grouping(v.grouping);
  int64_t t0 = 0, t1 = 0;
  if (s.range) {
    t0 = static_cast<int64_t>(std::floor(std::max(0.0, s.range->t0_ns)));
    t1 = static_cast<int64_t>(std::ceil(s.range->t1_ns));
    if (t1 <= t0) t1 = t0 + 1;  // an empty range still selects nothing rather than all
  }
  StatsModel& m = *v.model;
  if (m.whole_run() != !s.range || (s.range && (m.range_begin() != t0 || m.range_end() != t1)))
    m.set_range(t0, t1);
  return v.model.get();
}

void draw_range_line(StudioState& s, const StatsModel& m) {
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("By");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(170);
  if (ImGui::BeginCombo("##grouping", name_of(s.stats.grouping))) {
    for (int g = 0; g < kNumStatsGroupings; ++g)
      if (ImGui::Selectable(name_of(static_cast<StatsGrouping>(g)), static_cast<int>(s.stats.grouping) == g))
        s.stats.grouping = static_cast<StatsGrouping>(g);
    ImGui::EndCombo();
  }
  ImGui::SameLine();
  if (m.whole_run()) {
    ImGui::Text("Whole run: %s, %d workers.", format_duration(static_cast<double>(m.duration_ns())).c_str(),
                m.num_workers());
  } else {
    ImGui::Text("Range %s to %s (%s): executions starting in it.",
                format_duration(static_cast<double>(m.range_begin())).c_str(),
                format_duration(static_cast<double>(m.range_end())).c_str(),
                format_duration(static_cast<double>(m.range_end() - m.range_begin())).c_str());
    ImGui::SameLine();
    if (ImGui::SmallButton("Whole run")) s.range.reset();
  }
  ImGui::SameLine();
  if (ImGui::SmallButton("Timeline's visible window")) {
    TimeWindow w = s.window;
    w.t0_ns = std::max(0.0, w.t0_ns);
    w.t1_ns = std::min(static_cast<double>(m.duration_ns()), w.t1_ns);
    if (w.t1_ns > w.t0_ns) s.range = w;
  }
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("Limit the statistics to the time the timeline view shows now.");
}

void cell(const std::string& text, bool right = true) {
  if (right) {
    const float w = ImGui::CalcTextSize(text.c_str()).x;
    ImGui::SetCursorPosX(ImGui::GetCursorPosX() + std::max(0.0f, ImGui::GetColumnWidth() - w));
  }
  ImGui::TextUnformatted(text.c_str());
}

std::string percent(double share) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %%", 100.0 * share);
  return buf;
}

void share_bar(double share, ImU32 color) {
  const ImVec2 p = ImGui::GetCursorScreenPos();
  const float w = ImGui::GetColumnWidth();
  const float h = ImGui::GetTextLineHeight();
  ImGui::GetWindowDrawList()->AddRectFilled(
      ImVec2(p.x, p.y + 2), ImVec2(p.x + w * static_cast<float>(std::clamp(share, 0.0, 1.0)), p.y + h - 2),
      with_alpha(color, 90));
  cell(percent(share));
}

void draw_table(StudioState& s, StatsModel& m, float height) {
  const ImGuiTableFlags flags = ImGuiTableFlags_Sortable | ImGuiTableFlags_RowBg |
                                ImGuiTableFlags_BordersOuter | ImGuiTableFlags_BordersInnerV |
                                ImGuiTableFlags_Resizable | ImGuiTableFlags_ScrollY |
                                ImGuiTableFlags_SizingStretchProp;
  if (!ImGui::BeginTable("rows", kNumStatsColumns, flags, ImVec2(0, height))) return;
  ImGui::TableSetupScrollFreeze(0, 1);
  for (int c = 0; c < kNumStatsColumns; ++c) {
    ImGuiTableColumnFlags f = ImGuiTableColumnFlags_PreferSortDescending;
    if (static_cast<StatsColumn>(c) == StatsColumn::kTotal) f |= ImGuiTableColumnFlags_DefaultSort;
    if (static_cast<StatsColumn>(c) == StatsColumn::kName) f = ImGuiTableColumnFlags_PreferSortAscending;
    ImGui::TableSetupColumn(kColumnNames[c], f, c == 0 ? 1.6f : 1.0f, static_cast<ImGuiID>(c));
  }
  ImGui::TableNextRow(ImGuiTableRowFlags_Headers);
  for (int c = 0; c < kNumStatsColumns; ++c) {
    if (!ImGui::TableSetColumnIndex(c)) continue;
    const ImVec2 p = ImGui::GetCursorScreenPos();
    s.stats.header_x[static_cast<size_t>(c)] = p.x + 0.5f * ImGui::GetColumnWidth();
    s.stats.header_y = p.y + 0.5f * ImGui::GetTextLineHeight();
    ImGui::TableHeader(kColumnNames[c]);
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", kColumnHelp[c]);
  }
  if (ImGuiTableSortSpecs* specs = ImGui::TableGetSortSpecs(); specs && specs->SpecsCount > 0) {
    const ImGuiTableColumnSortSpecs& spec = specs->Specs[0];
    const auto column = static_cast<StatsColumn>(spec.ColumnUserID);
    const bool ascending = spec.SortDirection == ImGuiSortDirection_Ascending;
    if (specs->SpecsDirty || column != m.sort_column() || ascending != m.sort_ascending())
      m.sort(column, ascending);
    specs->SpecsDirty = false;
  }
  s.stats.row_y.clear();
  for (const StatsRow& r : m.rows()) {
    const ImU32 color = r.kind >= 0 ? kind_color(static_cast<OpKind>(r.kind)) : IM_COL32(160, 160, 160, 255);
    ImGui::TableNextRow();
    ImGui::TableSetColumnIndex(0);
    const ImVec2 p = ImGui::GetCursorScreenPos();
    const float h = ImGui::GetTextLineHeight();
    s.stats.row_y.push_back(p.y + 0.5f * h);
    ImGui::GetWindowDrawList()->AddRectFilled(ImVec2(p.x, p.y + 2), ImVec2(p.x + h - 4, p.y + h - 2), color, 2);
    ImGui::SetCursorScreenPos(ImVec2(p.x + h, p.y));
    const bool selected = r.name == s.stats.histogram_row;
    if (ImGui::Selectable(r.name.c_str(), selected, ImGuiSelectableFlags_SpanAllColumns))
      s.stats.histogram_row = r.name;
    if (ImGui::IsItemHovered()) {
      s.hovered_kind = r.kind;
      ImGui::SetTooltip("Click for the histogram of %s durations.", r.name.c_str());
    }
    ImGui::TableSetColumnIndex(1);
    cell(std::to_string(r.count));
    ImGui::TableSetColumnIndex(2);
    cell(format_duration(static_cast<double>(r.total_ns)));
    ImGui::TableSetColumnIndex(3);
    cell(format_duration(r.mean_ns));
    ImGui::TableSetColumnIndex(4);
    cell(format_duration(static_cast<double>(r.p50_ns)));
    ImGui::TableSetColumnIndex(5);
    cell(format_duration(static_cast<double>(r.p99_ns)));
    ImGui::TableSetColumnIndex(6);
    share_bar(r.share, color);
    ImGui::TableSetColumnIndex(7);
    cell(format_duration(static_cast<double>(r.bubble_before_ns)));
  }
  // Totals: every kind together, and what the SM time holds besides.
  ImGui::TableNextRow();
  ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg0, IM_COL32(255, 255, 255, 18));
  ImGui::TableSetColumnIndex(0);
  ImGui::TextUnformatted("all");
  ImGui::TableSetColumnIndex(1);
  cell(std::to_string(m.total_count()));
  ImGui::TableSetColumnIndex(2);
  cell(format_duration(static_cast<double>(m.total_busy_ns())));
  ImGui::TableSetColumnIndex(6);
  share_bar(m.capacity_ns() > 0 ? static_cast<double>(m.total_busy_ns()) / static_cast<double>(m.capacity_ns()) : 0,
            IM_COL32(200, 200, 200, 255));
  ImGui::TableSetColumnIndex(7);
  cell(format_duration(static_cast<double>(m.total_bubble_ns())));
  ImGui::EndTable();
}

// A count axis step of 1, 2 or 5 times a power of ten giving at most ~5 lines.
int64_t count_step(int64_t max_count) {
  int64_t step = 1;
  for (;;) {
    for (int64_t k : {1, 2, 5})
      if (max_count / (step * k) <= 5) return step * k;
    step *= 10;
  }
}

void draw_histogram(StudioState& s, StatsModel& m) {
  StatsViewState& v = s.stats;
  if (m.rows().empty()) return;
  if (std::none_of(m.rows().begin(), m.rows().end(), [&](const StatsRow& r) { return r.name == v.histogram_row; }))
    v.histogram_row = m.rows().front().name;
  const StatsRow& row = *std::find_if(m.rows().begin(), m.rows().end(),
                                      [&](const StatsRow& r) { return r.name == v.histogram_row; });
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("Durations of");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(160);
  if (ImGui::BeginCombo("##row", v.histogram_row.c_str())) {
    for (const StatsRow& r : m.rows())
      if (ImGui::Selectable(r.name.c_str(), r.name == v.histogram_row)) v.histogram_row = r.name;
    ImGui::EndCombo();
  }
  ImGui::SameLine();
  ImGui::SetNextItemWidth(140);
  ImGui::SliderInt("bins", &v.histogram_bins, 5, 100);
  ImGui::SameLine();
  ImGui::TextDisabled("%lld executions, p50 %s, p99 %s", static_cast<long long>(row.count),
                      format_duration(static_cast<double>(row.p50_ns)).c_str(),
                      format_duration(static_cast<double>(row.p99_ns)).c_str());

  const DurationHistogram h = m.histogram(v.histogram_row, v.histogram_bins);
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const ImVec2 p = ImGui::GetCursorScreenPos();
  const float height = std::max(120.0f, avail.y - 4);
  const float left = 56, bottom = 22, top = 8, right = 16;
  const ImVec2 a(p.x + left, p.y + top), b(p.x + avail.x - right, p.y + height - bottom);
  v.histogram_x0 = a.x;
  v.histogram_x1 = b.x;
  v.histogram_y0 = a.y;
  v.histogram_y1 = b.y;
  ImGui::InvisibleButton("##histogram", ImVec2(std::max(1.0f, avail.x), height));
  const bool hovered = ImGui::IsItemHovered();
  ImDrawList* dl = ImGui::GetWindowDrawList();
  dl->AddRectFilled(a, b, IM_COL32(255, 255, 255, 8));
  if (h.counts.empty() || b.x - a.x < 10 || b.y - a.y < 10) return;

  const ImU32 text = ImGui::GetColorU32(ImGuiCol_TextDisabled);
  const ImU32 grid = IM_COL32(255, 255, 255, 28);
  const double lo = static_cast<double>(h.lo_ns);
  const double hi = lo + static_cast<double>(h.bin_ns) * static_cast<double>(h.counts.size());
  const float w = b.x - a.x;
  auto x_of = [&](double ns) { return a.x + static_cast<float>((ns - lo) / (hi - lo)) * w; };
  // Count axis.
  const int64_t step = count_step(h.max_count);
  const int64_t top_count = (h.max_count + step - 1) / step * step;
  auto y_of = [&](double c) { return b.y - static_cast<float>(c / static_cast<double>(top_count)) * (b.y - a.y); };
  for (int64_t c = 0; c <= top_count; c += step) {
    const float y = y_of(static_cast<double>(c));
    dl->AddLine(ImVec2(a.x, y), ImVec2(b.x, y), grid);
    const std::string label = std::to_string(c);
    const ImVec2 ts = ImGui::CalcTextSize(label.c_str());
    dl->AddText(ImVec2(a.x - 6 - ts.x, y - ts.y / 2), text, label.c_str());
  }
  // Duration axis: the timeline's ruler over [lo, hi].
  const TimeAxis axis(TimeWindow{lo, hi}, a.x, w);
  for (const Tick& t : make_ruler(axis, 110).ticks) {
    const float x = static_cast<float>(axis.x_of(t.t_ns));
    if (x < a.x - 1 || x > b.x + 1) continue;
    dl->AddLine(ImVec2(x, b.y), ImVec2(x, b.y + 4), text);
    const ImVec2 ts = ImGui::CalcTextSize(t.label.c_str());
    dl->AddText(ImVec2(std::clamp(x - ts.x / 2, p.x, b.x - ts.x), b.y + 5), text, t.label.c_str());
  }
  const ImU32 color = row.kind >= 0 ? kind_color(static_cast<OpKind>(row.kind)) : IM_COL32(160, 160, 160, 255);
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  for (size_t i = 0; i < h.counts.size(); ++i) {
    const double b0 = lo + static_cast<double>(h.bin_ns) * static_cast<double>(i);
    const float x0 = x_of(b0), x1 = x_of(b0 + static_cast<double>(h.bin_ns));
    const float y = y_of(static_cast<double>(h.counts[i]));
    const bool over = hovered && mouse.x >= x0 && mouse.x < x1;
    if (h.counts[i] > 0)
      dl->AddRectFilled(ImVec2(x0 + (x1 - x0 > 4 ? 1.0f : 0.0f), std::min(y, b.y - 1)), ImVec2(x1, b.y),
                        over ? color : with_alpha(color, 200));
    if (over)
      ImGui::SetTooltip("%s to %s: %lld executions", format_duration(b0).c_str(),
                        format_duration(b0 + static_cast<double>(h.bin_ns)).c_str(),
                        static_cast<long long>(h.counts[i]));
  }
  // p50 and p99 markers.
  auto marker = [&](int64_t ns, const char* name) {
    const float x = std::clamp(x_of(static_cast<double>(ns) + 0.5 * static_cast<double>(h.bin_ns)), a.x, b.x);
    dl->AddLine(ImVec2(x, a.y), ImVec2(x, b.y), IM_COL32(255, 255, 255, 150), 1.0f);
    dl->AddText(ImVec2(std::min(x + 3, b.x - ImGui::CalcTextSize(name).x), a.y), IM_COL32(255, 255, 255, 200), name);
  };
  marker(row.p50_ns, "p50");
  if (row.p99_ns != row.p50_ns) marker(row.p99_ns, "p99");
}

}  // namespace

static void draw_stats_panel(StudioState& s) {
  if (!s.model) {
    ImGui::TextDisabled("No run is open.");
    return;
  }
  StatsModel* m = nullptr;
  try {
    m = stats_model(s);
  } catch (const std::exception& e) {
    ImGui::TextWrapped("Cannot compute the statistics: %s", e.what());
    return;
  }
  draw_range_line(s, *m);
  if (m->rows().empty()) {
    ImGui::TextDisabled("No execution starts in this range.");
    return;
  }
  const float line = ImGui::GetTextLineHeightWithSpacing();
  const float table_h = std::min(line * static_cast<float>(m->rows().size() + 2) + 10,
                                 0.5f * ImGui::GetContentRegionAvail().y);
  draw_table(s, *m, table_h);
  ImGui::Spacing();
  draw_histogram(s, *m);
}

MPK_STUDIO_PANEL(stats, "Stats", 20, draw_stats_panel);

}  // namespace mpk::studio
