// The timeline's geometry: axis, window operations, ruler, rows and per-row boxes.
#include "studio/model/timeline_layout.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "studio/model/gallop.h"

namespace mpk::studio {
namespace {

constexpr double kMinSpan = 100.0;  // ns
constexpr double kCoarseCells = 8;  // cells a slice spans at least to be summed from them

// Keeps x within a few pixels of the axis so that far-off coordinates stay exact in float.
float clamp_x(const TimeAxis& a, double x) {
  return static_cast<float>(std::clamp(x, static_cast<double>(a.x0) - 8.0,
                                       static_cast<double>(a.x0 + a.width) + 8.0));
}

struct Unit {
  double ns;
  const char* name;
};

Unit unit_for(double ns) {
  const double a = std::fabs(ns);
  if (a >= 1e9) return {1e9, "s"};
  if (a >= 1e6) return {1e6, "ms"};
  if (a >= 1e3) return {1e3, "us"};
  return {1, "ns"};
}

constexpr auto end_of = [](const Execution& e) { return e.end_ns; };

}  // namespace

TimeAxis::TimeAxis(const TimeWindow& w, float x0_, float width_)
    : t0_ns(w.t0_ns), x0(x0_), width(std::max(width_, 1.0f)) {
  ns_per_px = std::max(w.span(), 1e-3) / static_cast<double>(width);
}

TimeAxis shifted_axis(TimeAxis a, double shift_ns) {
  a.t0_ns -= shift_ns;
  return a;
}

TimeWindow zoom_at(const TimeWindow& w, double t_cursor, double factor, double run_ns) {
  const double span = w.span();
  const double max_span = std::max(4.0 * run_ns, kMinSpan);
  const double new_span = std::clamp(span * factor, kMinSpan, max_span);
  const double k = new_span / span;
  TimeWindow out;
  out.t0_ns = t_cursor - (t_cursor - w.t0_ns) * k;
  out.t1_ns = out.t0_ns + new_span;
  return out;
}

TimeWindow pan_by(const TimeWindow& w, double dt_ns, double run_ns) {
  const double span = w.span();
  // Keep at least half of the window over the run.
  const double t0 = std::clamp(w.t0_ns + dt_ns, -0.5 * span, std::max(run_ns - 0.5 * span, -0.5 * span));
  return {t0, t0 + span};
}

TimeWindow fit(double run_ns) {
  const double d = std::max(run_ns, kMinSpan);
  return {-0.01 * d, 1.01 * d};
}

std::string format_duration(double ns) {
  const Unit u = unit_for(ns);
  const double v = ns / u.ns;
  char buf[48];
  if (u.ns == 1)
    std::snprintf(buf, sizeof buf, "%.0f ns", v);
  else
    std::snprintf(buf, sizeof buf, std::fabs(v) < 10 ? "%.3f %s" : std::fabs(v) < 100 ? "%.2f %s" : "%.1f %s",
                  v, u.name);
  return buf;
}

Ruler make_ruler(const TimeAxis& axis, float min_px) {
  Ruler r;
  const double want = static_cast<double>(min_px) * axis.ns_per_px;
  double p = std::pow(10.0, std::floor(std::log10(std::max(want, 1.0))));
  int mantissa = 1;
  for (;;) {
    if (p >= want) break;
    if (2 * p >= want) { mantissa = 2; p *= 2; break; }
    if (5 * p >= want) { mantissa = 5; p *= 5; break; }
    p *= 10;
  }
  r.step_ns = std::max(p, 1.0);
  // Labels in the unit of the window's far end, with the decimals the step needs (at
  // most 3: a finer step takes the next smaller unit), e.g. "69.05 ms".
  Unit u = unit_for(std::max(std::fabs(axis.t0_ns), std::fabs(axis.t1_ns())));
  const auto decimals = [&](const Unit& unit) {
    const double in_unit = r.step_ns / unit.ns;
    return in_unit >= 1 ? 0 : static_cast<int>(std::ceil(-std::log10(in_unit) - 1e-9));
  };
  while (decimals(u) > 3) u = unit_for(u.ns / 10);
  const int digits = decimals(u);
  const double t_end = axis.t1_ns();
  const double first = std::ceil(axis.t0_ns / r.step_ns) * r.step_ns;
  for (double t = first; t <= t_end; t += r.step_ns) {
    char buf[48];
    const double shown = std::fabs(t) < r.step_ns * 1e-6 ? 0.0 : t;
    std::snprintf(buf, sizeof buf, "%.*f %s", digits, shown / u.ns, u.name);
    r.ticks.push_back({t, buf});
  }
  const double minor = r.step_ns / (mantissa == 2 ? 4 : 5);
  for (double t = first - r.step_ns; t <= t_end; t += minor)
    if (t >= axis.t0_ns) r.minor.push_back(t);
  return r;
}

std::vector<Row> layout_rows(int32_t num_workers, int32_t group_size,
                             const std::vector<bool>& collapsed, float row_height,
                             float header_height) {
  std::vector<Row> rows;
  const int32_t g = std::max(group_size, 1);
  float y = 0;
  for (int32_t first = 0, group = 0; first < num_workers; first += g, ++group) {
    rows.push_back({Row::kGroupHeader, group, -1, y, header_height});
    y += header_height;
    const bool closed = static_cast<size_t>(group) < collapsed.size() && collapsed[group];
    if (closed) continue;
    for (int32_t w = first; w < std::min(first + g, num_workers); ++w) {
      rows.push_back({Row::kWorker, group, w, y, row_height});
      y += row_height;
    }
  }
  return rows;
}

void append_rank_rows(std::vector<Row>& rows, const std::vector<OtherRank>& ranks, int32_t first_group,
                      const std::vector<bool>& collapsed, float row_height, float header_height) {
  float y = rows.empty() ? 0.0f : rows.back().y + rows.back().height;
  for (size_t k = 0; k < ranks.size(); ++k) {
    const int32_t group = first_group + static_cast<int32_t>(k);
    const int32_t rank = static_cast<int32_t>(k);
    rows.push_back({Row::kGroupHeader, group, -1, y, header_height, rank});
    y += header_height;
    if (static_cast<size_t>(group) < collapsed.size() && collapsed[static_cast<size_t>(group)]) continue;
    for (int32_t w = 0; w < ranks[k].model->num_workers(); ++w) {
      rows.push_back({Row::kWorker, group, w, y, row_height, rank});
      y += row_height;
    }
  }
}

int32_t row_at(const std::vector<Row>& rows, float y) {
  const auto it = std::upper_bound(rows.begin(), rows.end(), y,
                                   [](float v, const Row& r) { return v < r.y; });
  if (it == rows.begin()) return -1;
  const Row& r = *(it - 1);
  return y < r.y + r.height ? static_cast<int32_t>(it - 1 - rows.begin()) : -1;
}

void layout_tasks(const TraceModel& m, int32_t worker, const TimeAxis& axis, float min_px,
                  std::vector<TaskBox>& out) {
  const double t0 = axis.t0_ns, t1 = axis.t1_ns();
  IndexRange r = m.executions_in(worker, static_cast<int64_t>(std::floor(t0)),
                                 static_cast<int64_t>(std::ceil(t1)));
  if (r.empty()) return;
  r.begin = m.group_of(r.begin).begin;  // a group starts with its first member
  const IndexRange all = m.worker_range(worker);
  const std::vector<Execution>& xs = m.executions();
  const double min_ns = static_cast<double>(min_px) * axis.ns_per_px;
  for (int64_t i = r.begin; i < r.end;) {
    const Execution& x = xs[static_cast<size_t>(i)];
    if (static_cast<double>(x.end_ns - x.start_ns) >= min_ns) {
      const int64_t members = m.group_of(i).end - i;
      out.push_back({clamp_x(axis, axis.x_of(x.start_ns)), clamp_x(axis, axis.x_of(x.end_ns)), i, members,
                     false, m.kind_of(x.task), x.start_ns, x.end_ns});
      i += members;
      continue;
    }
    // A run of small tasks: every task ending within min_ns of the run's end started
    // after it (a worker runs one task at a time) and so is small too.
    int64_t j = i + 1;
    double group_end = static_cast<double>(x.end_ns);
    for (;;) {
      const int64_t kk = gallop(xs, j, all.end, group_end + min_ns, end_of);
      if (kk == j) break;
      j = kk;
      group_end = std::max(group_end, static_cast<double>(xs[static_cast<size_t>(j - 1)].end_ns));
    }
    const bool one = m.group_of(i).end >= j;  // a small linear group alone
    out.push_back({clamp_x(axis, axis.x_of(x.start_ns)), clamp_x(axis, axis.x_of(group_end)), i, j - i, !one,
                   m.kind_of(x.task), x.start_ns, static_cast<int64_t>(group_end)});
    i = j;
  }
}

void merged_slices(const TraceModel& m, const TaskBox& box, const TimeAxis& axis, float slice_px,
                   std::vector<KindSlice>& out) {
  const std::vector<Execution>& xs = m.executions();
  const int32_t worker = xs[static_cast<size_t>(box.exec)].worker;
  const double box_t0 = static_cast<double>(box.t0_ns), box_t1 = static_cast<double>(box.t1_ns);
  const float left = std::max(box.x0, axis.x0), right = std::min(box.x1, axis.x0 + axis.width);
  // Zoomed out, a slice covers kCoarseCells cells of the model's coarse picture or more:
  // sum cells (the partial cells at its ends, spread evenly, err by at most a cell each).
  const CoarsePicture& pic = m.picture();
  const bool coarse = slice_px * axis.ns_per_px >= kCoarseCells * pic.cell_ns();
  TraceModel::SpanCursor cursor;  // slices move right: each search starts where the last one ended
  cursor.exec = box.exec;
  const float first = axis.x0 + std::floor((left - axis.x0) / slice_px) * slice_px;
  for (float x = first; x < right; x += slice_px) {
    const float xa = std::max(x, left), xb = std::min(x + slice_px, right);
    const double ta = std::max(axis.t_of(xa), box_t0), tb = std::min(axis.t_of(xb), box_t1);
    if (xb <= xa || tb <= ta) continue;
    const SpanSummary sum = coarse ? pic.summarize(worker, ta, tb) : m.summarize(worker, ta, tb, &cursor);
    KindSlice sl{xa, xb, OpKind::kLinear, static_cast<float>(std::clamp(sum.busy_ns / (tb - ta), 0.0, 1.0)),
                 sum.cause, sum.exec};
    if (sl.exec < 0) sl.busy = 0;
    else sl.kind = static_cast<OpKind>(sum.kind);
    KindSlice* last = out.empty() ? nullptr : &out.back();
    if (last && last->x1 == xa && last->kind == sl.kind && last->cause == sl.cause &&
        std::fabs(last->busy - sl.busy) < 1.0f / 512) {
      // Alike: widen the last slice, its busy fraction weighted by width.
      const float w0 = last->x1 - last->x0, w1 = xb - xa;
      last->busy = (last->busy * w0 + sl.busy * w1) / (w0 + w1);
      last->x1 = xb;
    } else {
      out.push_back(sl);
    }
  }
}

double box_busy_fraction(const TraceModel& m, const TaskBox& box) {
  if (box.t1_ns <= box.t0_ns) return 1.0;
  const int32_t worker = m.execution(box.exec).worker;
  return static_cast<double>(m.busy_ns(worker, box.t0_ns, box.t1_ns)) / static_cast<double>(box.t1_ns - box.t0_ns);
}

void layout_bubbles(const TraceModel& m, int32_t worker, const TimeAxis& axis, float min_px,
                    std::vector<BubbleBox>& out) {
  thread_local std::vector<int64_t> idx;
  idx.clear();
  const int64_t min_ns = std::max<int64_t>(1, static_cast<int64_t>(min_px * axis.ns_per_px));
  m.wide_bubbles(worker, static_cast<int64_t>(std::floor(axis.t0_ns)),
                 static_cast<int64_t>(std::ceil(axis.t1_ns())), min_ns, idx);
  const std::span<const Bubble> bs = m.bubbles(worker);
  for (int64_t i : idx) {
    const Bubble& b = bs[static_cast<size_t>(i)];
    out.push_back({clamp_x(axis, axis.x_of(b.start_ns)), clamp_x(axis, axis.x_of(b.end_ns)), i});
  }
}

}  // namespace mpk::studio
