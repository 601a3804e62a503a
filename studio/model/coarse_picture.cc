// The coarse picture of a run (studio/model/coarse_picture.h).
#include "studio/model/coarse_picture.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace mpk::studio {
namespace {

// Cells per worker: 8192 up to 256 workers, fewer beyond (at least 512), so that the grid
// and its prefix sums (28 bytes a cell) stay within about 64 MB.
int32_t cells_for(int32_t workers) {
  int32_t cells = 8192;
  while (cells > 512 && static_cast<int64_t>(cells) * std::max(workers, 1) > (int64_t{1} << 21)) cells /= 2;
  return cells;
}

}  // namespace

CoarsePicture::CoarsePicture(std::span<const Execution> execs, std::span<const int64_t> worker_begin,
                             std::span<const Bubble> bubbles, std::span<const int64_t> bubble_begin,
                             const std::vector<Task>& tasks, std::span<const OpKind> kinds,
                             int64_t duration_ns) {
  workers_ = static_cast<int32_t>(worker_begin.size()) - 1;
  cells_ = cells_for(workers_);
  cell_ns_ = std::max(1.0, static_cast<double>(duration_ns) / cells_);
  grid_.assign(static_cast<size_t>(workers_) * static_cast<size_t>(cells_), PictureCell{});
  prefix_.assign(static_cast<size_t>(workers_) * static_cast<size_t>(cells_ + 1), Prefix{});
  busy_workers_.assign(static_cast<size_t>(cells_), 0.0);
  bytes_.assign(static_cast<size_t>(cells_), 0.0);
  std::vector<double> busy(static_cast<size_t>(cells_));
  std::vector<std::array<double, 4>> idle(static_cast<size_t>(cells_));
  // Spreads `amount` evenly over [a, b) into the cells of `into` (all of it into a's cell
  // when the span is empty).
  const auto spread = [&](auto& into, double a, double b, double amount, auto&& add) {
    const int32_t c0 = cell_at(a);
    if (b <= a) {
      add(into[static_cast<size_t>(c0)], amount);
      return;
    }
    const int32_t c1 = cell_at(std::nextafter(b, a));
    const double per_ns = amount / (b - a);
    for (int32_t c = c0; c <= c1; ++c) {
      const double lo = std::max(a, c * cell_ns_), hi = std::min(b, (c + 1) * cell_ns_);
      if (hi > lo || c0 == c1) add(into[static_cast<size_t>(c)], per_ns * std::max(hi - lo, 0.0));
    }
  };
  const auto plus = [](double& x, double v) { x += v; };

  for (int32_t w = 0; w < workers_; ++w) {
    const int64_t b = worker_begin[static_cast<size_t>(w)], e = worker_begin[static_cast<size_t>(w) + 1];
    std::fill(busy.begin(), busy.end(), 0.0);
    for (auto& a : idle) a = {};
    double covered = -1;
    for (int64_t i = b; i < e; ++i) {
      const Execution& x = execs[static_cast<size_t>(i)];
      const double s = static_cast<double>(x.start_ns), t = static_cast<double>(x.end_ns);
      const double from = std::max(s, covered);
      if (t > from) spread(busy, from, t, t - from, plus);
      covered = std::max(covered, t);
      spread(bytes_, s, t, static_cast<double>(tasks[static_cast<size_t>(x.task)].bytes), plus);
    }
    for (int64_t i = bubble_begin[static_cast<size_t>(w)]; i < bubble_begin[static_cast<size_t>(w) + 1]; ++i) {
      const Bubble& x = bubbles[static_cast<size_t>(i)];
      const auto cause = static_cast<size_t>(x.cause) % 4;
      spread(idle, static_cast<double>(x.start_ns), static_cast<double>(x.end_ns),
             static_cast<double>(x.end_ns - x.start_ns), [cause](std::array<double, 4>& a, double v) { a[cause] += v; });
    }
    // The execution shown in each cell: the first ending after the cell's middle covers
    // the middle, or starts after it (then it counts if it starts within the cell), else
    // the one before it when that reaches into the cell.
    int64_t i = b;
    for (int32_t c = 0; c < cells_; ++c) {
      PictureCell& cell = grid_[static_cast<size_t>(w) * static_cast<size_t>(cells_) + static_cast<size_t>(c)];
      const double fraction = std::min(1.0, busy[static_cast<size_t>(c)] / cell_ns_);
      cell.busy = static_cast<uint16_t>(std::lround(fraction * kBusyOne));
      busy_workers_[static_cast<size_t>(c)] += fraction;
      const auto& a = idle[static_cast<size_t>(c)];
      const auto top = std::max_element(a.begin(), a.end());
      if (*top > 0) cell.cause = static_cast<int8_t>(top - a.begin());
      const Prefix& before = prefix(w, c);
      Prefix& after = prefix_[static_cast<size_t>(w) * static_cast<size_t>(cells_ + 1) + static_cast<size_t>(c) + 1];
      after.busy = before.busy + cell.busy;
      for (size_t k = 0; k < 4; ++k)
        after.idle[k] = before.idle[k] + static_cast<uint32_t>(std::lround(std::min(1.0, a[k] / cell_ns_) * kBusyOne));
      const double c0 = c * cell_ns_, mid = c0 + 0.5 * cell_ns_, c1 = c0 + cell_ns_;
      while (i < e && static_cast<double>(execs[static_cast<size_t>(i)].end_ns) <= mid) ++i;
      if (i == e) {
        if (i > b && static_cast<double>(execs[static_cast<size_t>(i - 1)].end_ns) > c0)
          cell.exec = static_cast<int32_t>(i - 1);
        continue;
      }
      const Execution& x = execs[static_cast<size_t>(i)];
      if (static_cast<double>(x.start_ns) <= mid)
        cell.exec = static_cast<int32_t>(i);
      else if (i > b && static_cast<double>(execs[static_cast<size_t>(i - 1)].end_ns) > c0)
        cell.exec = static_cast<int32_t>(i - 1);
      else if (static_cast<double>(x.start_ns) < c1)
        cell.exec = static_cast<int32_t>(i);
    }
    for (int32_t c = 0; c < cells_; ++c) {
      PictureCell& cell = grid_[static_cast<size_t>(w) * static_cast<size_t>(cells_) + static_cast<size_t>(c)];
      if (cell.exec >= 0)
        cell.kind = static_cast<int8_t>(kinds[static_cast<size_t>(execs[static_cast<size_t>(cell.exec)].task)]);
    }
  }
}

int32_t CoarsePicture::cell_at(double t) const {
  const double c = std::floor(t / cell_ns_);
  return static_cast<int32_t>(std::clamp(c, 0.0, static_cast<double>(cells_ - 1)));
}

SpanSummary CoarsePicture::summarize(int32_t worker, double t0, double t1) const {
  SpanSummary s;
  t0 = std::max(t0, 0.0);
  t1 = std::min(t1, cells_ * cell_ns_);
  if (worker < 0 || worker >= workers_ || t1 <= t0) return s;
  const int32_t c0 = cell_at(t0), c1 = cell_at(std::nextafter(t1, t0));
  // Whole cells c0 + 1 .. c1 - 1 from the prefix sums; the end cells by their overlap.
  const double unit = cell_ns_ / kBusyOne;
  std::array<double, 4> idle{};
  if (c1 > c0 + 1) {
    const Prefix &a = prefix(worker, c0 + 1), &b = prefix(worker, c1);
    s.busy_ns = (b.busy - a.busy) * unit;
    for (size_t k = 0; k < 4; ++k) idle[k] = (b.idle[k] - a.idle[k]) * unit;
  }
  for (const int32_t c : {c0, c1}) {
    if (c == c1 && c1 == c0) break;
    const double w = std::max(0.0, std::min(t1, (c + 1) * cell_ns_) - std::max(t0, c * cell_ns_)) / cell_ns_;
    const Prefix &a = prefix(worker, c), &b = prefix(worker, c + 1);
    s.busy_ns += w * (b.busy - a.busy) * unit;
    for (size_t k = 0; k < 4; ++k) idle[k] += w * (b.idle[k] - a.idle[k]) * unit;
  }
  if (c0 == c1) {  // one cell: the loop above took it once
    const double w = (t1 - t0) / cell_ns_;
    const Prefix &a = prefix(worker, c0), &b = prefix(worker, c0 + 1);
    s.busy_ns = w * (b.busy - a.busy) * unit;
    for (size_t k = 0; k < 4; ++k) idle[k] = w * (b.idle[k] - a.idle[k]) * unit;
  }
  const PictureCell* shown = &cell(worker, cell_at(0.5 * (t0 + t1)));
  for (int32_t c = c0; c <= c1 && shown->exec < 0; ++c)
    if (cell(worker, c).busy > 0) shown = &cell(worker, c);
  s.exec = shown->exec;
  s.kind = shown->kind;
  const auto top = std::max_element(idle.begin(), idle.end());
  if (*top > 0) s.cause = static_cast<int>(top - idle.begin());
  return s;
}

}  // namespace mpk::studio
