// The busy-SM strip and the bandwidth lane (studio/model/lanes.h).
#include "studio/model/lanes.h"

#include <algorithm>
#include <cmath>

namespace mpk::studio {
namespace {

// The lane reads the cells when a column spans this share of a cell or more (spreading a
// cell's bytes evenly over it).
constexpr double kLaneCellShare = 0.25;

// Sums `value(c)` over the cells overlapping [t0, t1), partial cells by their overlap.
template <typename Value>
double sum_cells(const CoarsePicture& p, double t0, double t1, Value value) {
  t0 = std::max(t0, 0.0);
  t1 = std::min(t1, p.num_cells() * p.cell_ns());
  if (t1 <= t0) return 0;
  double sum = 0;
  for (int32_t c = p.cell_at(t0), last = p.cell_at(std::nextafter(t1, t0)); c <= last; ++c) {
    const double w = std::min(t1, (c + 1) * p.cell_ns()) - std::max(t0, c * p.cell_ns());
    sum += value(c) * std::max(w, 0.0) / p.cell_ns();
  }
  return sum;
}

}  // namespace

std::vector<float> busy_strip(const TraceModel& m, int columns) {
  std::vector<float> out(static_cast<size_t>(std::max(columns, 0)), 0.0f);
  const double d = static_cast<double>(m.duration_ns());
  if (columns <= 0 || d <= 0 || m.num_workers() <= 0) return out;
  const CoarsePicture& p = m.picture();
  for (int x = 0; x < columns; ++x) {
    const double t0 = d * x / columns, t1 = d * (x + 1) / columns;
    const double cells = (t1 - t0) / p.cell_ns();
    const double busy = sum_cells(p, t0, t1, [&](int32_t c) { return p.busy_workers(c); });
    out[static_cast<size_t>(x)] = static_cast<float>(std::clamp(busy / cells / m.num_workers(), 0.0, 1.0));
  }
  return out;
}

std::vector<float> bandwidth_lane(const TraceModel& m, const TimeAxis& axis, int columns) {
  std::vector<double> bytes(static_cast<size_t>(std::max(columns, 0)) + 1, 0.0);
  if (columns <= 0) return {};
  const CoarsePicture& p = m.picture();
  const double npp = axis.ns_per_px;
  if (npp >= kLaneCellShare * p.cell_ns()) {
    for (int x = 0; x < columns; ++x)
      bytes[static_cast<size_t>(x)] =
          sum_cells(p, axis.t_of(axis.x0 + x), axis.t_of(axis.x0 + x + 1), [&](int32_t c) { return p.bytes(c); });
  } else {
    // Finer: each execution in the window adds its rate to the columns it covers, the end
    // columns by their overlap; whole columns through a difference array. O(executions).
    std::vector<double> rate(static_cast<size_t>(columns) + 1, 0.0);
    const double t0 = axis.t0_ns, t1 = axis.t0_ns + columns * npp;
    for (int32_t w = 0; w < m.num_workers(); ++w) {
      const IndexRange r = m.executions_in(w, static_cast<int64_t>(std::floor(t0)), static_cast<int64_t>(std::ceil(t1)));
      for (int64_t i = r.begin; i < r.end; ++i) {
        const Execution& e = m.execution(i);
        const double b_total = static_cast<double>(m.bytes_of(i));
        const double xs = std::clamp((static_cast<double>(e.start_ns) - t0) / npp, 0.0, static_cast<double>(columns));
        const double xe = std::clamp((static_cast<double>(e.end_ns) - t0) / npp, 0.0, static_cast<double>(columns));
        const double len = static_cast<double>(e.end_ns - e.start_ns) / npp;  // in columns
        if (len <= 0) {
          bytes[static_cast<size_t>(std::min<double>(xs, columns - 1))] += b_total;
          continue;
        }
        const double per_col = b_total / len;
        const auto cs = static_cast<int64_t>(std::floor(xs)), ce = static_cast<int64_t>(std::floor(xe));
        if (cs == ce) {
          bytes[static_cast<size_t>(std::min<int64_t>(cs, columns - 1))] += per_col * (xe - xs);
          continue;
        }
        bytes[static_cast<size_t>(cs)] += per_col * (static_cast<double>(cs + 1) - xs);
        if (ce < columns) bytes[static_cast<size_t>(ce)] += per_col * (xe - static_cast<double>(ce));
        rate[static_cast<size_t>(cs + 1)] += per_col;
        rate[static_cast<size_t>(ce)] -= per_col;
      }
    }
    double running = 0;
    for (int x = 0; x < columns; ++x) bytes[static_cast<size_t>(x)] += (running += rate[static_cast<size_t>(x)]);
  }
  std::vector<float> out(static_cast<size_t>(columns));
  for (int x = 0; x < columns; ++x) out[static_cast<size_t>(x)] = static_cast<float>(bytes[static_cast<size_t>(x)] / npp);
  return out;
}

double bandwidth_floor(const TraceModel& m) { return static_cast<double>(m.run().device.mem_bandwidth) * 1e-9; }

}  // namespace mpk::studio
