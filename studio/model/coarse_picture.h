// A run cut into cells for drawing zoomed out: the timeline's merged boxes, the compare
// lanes, the busy-SM strip and the bandwidth lane read it instead of the executions when a
// pixel covers a cell or more, so a frame's cost follows the screen, not the trace. Per
// worker and cell: the execution shown there (running at the cell's middle, else the first
// to start in it), the busy fraction (the union of the worker's executions, never a sum:
// a linear group's members count once) and the idle cause with the most time in it. Per
// cell over all workers: the busy workers and the bytes streamed (each execution's bytes
// spread evenly over its duration). Built once per run in O(executions + bubbles +
// workers * cells); a span's busy time and idle causes in O(1).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "ir/module.h"
#include "traces/trace_db.h"

namespace mpk::studio {

struct PictureCell {
  int32_t exec = -1;    // index into the executions; -1: idle all through the cell
  uint16_t busy = 0;    // busy fraction * kBusyOne
  int8_t cause = -1;    // BubbleCause with the most idle time in the cell; -1: none
  int8_t kind = -1;     // the OpKind of `exec` (read without touching the executions)
};

// A span of one worker's time summed over cells (or exactly, TraceModel::summarize).
struct SpanSummary {
  double busy_ns = 0;
  int64_t exec = -1;  // the execution shown for the span (its kind colours it); -1: none
  int kind = -1;      // its OpKind
  int cause = -1;     // the idle cause with the most time in the span; -1: none
};

class CoarsePicture {
 public:
  static constexpr uint16_t kBusyOne = 65535;

  CoarsePicture() = default;
  // `execs` ordered by (worker, start), worker w's at [worker_begin[w], worker_begin[w+1]);
  // `bubbles` likewise with `bubble_begin`; `tasks` for the bytes each streams and
  // `kinds` for each task's OpKind.
  CoarsePicture(std::span<const Execution> execs, std::span<const int64_t> worker_begin,
                std::span<const Bubble> bubbles, std::span<const int64_t> bubble_begin,
                const std::vector<Task>& tasks, std::span<const OpKind> kinds, int64_t duration_ns);

  int32_t num_cells() const { return cells_; }
  double cell_ns() const { return cell_ns_; }
  const PictureCell& cell(int32_t worker, int32_t c) const {
    return grid_[static_cast<size_t>(worker) * static_cast<size_t>(cells_) + static_cast<size_t>(c)];
  }
  // The cell holding time t, clamped to the run.
  int32_t cell_at(double t) const;
  // Over cells overlapping [t0, t1) of `worker`, partial cells weighted by their overlap:
  // busy time, the execution of the cell holding the span's middle (else of any busy
  // cell), and the cause with the most idle time.
  SpanSummary summarize(int32_t worker, double t0, double t1) const;
  // Over all workers: busy workers (0..workers) and bytes streamed in cell c.
  double busy_workers(int32_t c) const { return busy_workers_[static_cast<size_t>(c)]; }
  double bytes(int32_t c) const { return bytes_[static_cast<size_t>(c)]; }

 private:
  // Per worker, sums over its cells 0..c-1 (c in 0..cells) in units of a cell's time
  // / kBusyOne: busy time, and idle time by cause. A span's sums are O(1).
  struct Prefix {
    uint32_t busy = 0;
    std::array<uint32_t, 4> idle{};
  };
  const Prefix& prefix(int32_t worker, int32_t c) const {
    return prefix_[static_cast<size_t>(worker) * static_cast<size_t>(cells_ + 1) + static_cast<size_t>(c)];
  }

  int32_t workers_ = 0;
  int32_t cells_ = 1;
  double cell_ns_ = 1;
  std::vector<PictureCell> grid_;  // [worker * cells + cell]
  std::vector<Prefix> prefix_;     // [worker * (cells + 1) + c]
  std::vector<double> busy_workers_, bytes_;
};

}  // namespace mpk::studio
