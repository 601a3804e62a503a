// The timeline's geometry: axis, window operations, ruler, rows and per-row boxes.
#include "studio/timeline_layout.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace mpk::studio {
namespace {

constexpr double kMinSpan = 100.0;  // ns

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

// The first index in [lo, hi) whose key(x) >= v (keys increase along the range),
// searching outward from lo: O(log distance), so walking a row costs what the screen
// shows.
template <typename Key>
int64_t gallop(const std::vector<Execution>& xs, int64_t lo, int64_t hi, double v, Key key) {
  if (lo >= hi || static_cast<double>(key(xs[static_cast<size_t>(lo)])) >= v) return lo;
  int64_t below = lo;  // key < v here
  int64_t probe = hi;
  for (int64_t step = 1;; step *= 2) {
    const int64_t p = below + step;
    if (p >= hi) break;
    if (static_cast<double>(key(xs[static_cast<size_t>(p)])) >= v) {
      probe = p;
      break;
    }
    below = p;
  }
  const auto it = std::partition_point(xs.begin() + below + 1, xs.begin() + probe, [&](const Execution& e) {
    return static_cast<double>(key(e)) < v;
  });
  return it - xs.begin();
}

constexpr auto end_of = [](const Execution& e) { return e.end_ns; };
constexpr auto start_of = [](const Execution& e) { return e.start_ns; };

}  // namespace

TimeAxis::TimeAxis(const TimeWindow& w, float x0_, float width_)
    : t0_ns(w.t0_ns), x0(x0_), width(std::max(width_, 1.0f)) {
  ns_per_px = std::max(w.span(), 1e-3) / static_cast<double>(width);
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
  const IndexRange r = m.executions_in(worker, static_cast<int64_t>(std::floor(t0)),
                                       static_cast<int64_t>(std::ceil(t1)));
  const IndexRange all = m.worker_range(worker);
  const std::vector<Execution>& xs = m.executions();
  const double min_ns = static_cast<double>(min_px) * axis.ns_per_px;
  for (int64_t i = r.begin; i < r.end;) {
    const Execution& x = xs[static_cast<size_t>(i)];
    if (static_cast<double>(x.end_ns - x.start_ns) >= min_ns) {
      out.push_back({clamp_x(axis, axis.x_of(x.start_ns)), clamp_x(axis, axis.x_of(x.end_ns)), i, 1,
                     m.kind_of(x.task)});
      ++i;
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
      group_end = static_cast<double>(xs[static_cast<size_t>(j - 1)].end_ns);
    }
    const Execution& mid = xs[static_cast<size_t>(i + (j - i) / 2)];
    out.push_back({clamp_x(axis, axis.x_of(x.start_ns)), clamp_x(axis, axis.x_of(group_end)), i,
                   j - i, m.kind_of(mid.task)});
    i = j;
  }
}

void merged_slices(const TraceModel& m, const TaskBox& box, const TimeAxis& axis, float slice_px,
                   std::vector<KindSlice>& out) {
  const std::vector<Execution>& xs = m.executions();
  const int64_t last = box.exec + box.count;
  const int32_t worker = xs[static_cast<size_t>(box.exec)].worker;
  // Zoomed out, a slice covers a cell of the model's coarse picture or more: read it.
  const bool coarse = slice_px * axis.ns_per_px >= m.kind_cell_ns();
  int64_t at = box.exec;  // slices move right: each search starts where the last one ended
  for (float x = box.x0; x < box.x1; x += slice_px) {
    const float x1 = std::min(x + slice_px, box.x1);
    const double t = axis.t_of(0.5 * (x + x1));
    const int cell = coarse ? m.kind_cell(worker, t) : -1;
    if (cell >= 0) {
      const auto k = static_cast<OpKind>(cell);
      if (!out.empty() && out.back().kind == k && out.back().x1 == x)
        out.back().x1 = x1;
      else
        out.push_back({x, x1, k});
      continue;
    }
    // The last task starting at or before t, unless it ended before t and the next
    // one starts within the box.
    int64_t i = gallop(xs, at, last, std::nextafter(t, 1e300), start_of);
    if (i > box.exec) --i;
    if (static_cast<double>(xs[static_cast<size_t>(i)].end_ns) < t && i + 1 < last) ++i;
    at = i;
    const OpKind k = m.kind_of(xs[static_cast<size_t>(i)].task);
    if (!out.empty() && out.back().kind == k && out.back().x1 == x)
      out.back().x1 = x1;
    else
      out.push_back({x, x1, k});
  }
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
