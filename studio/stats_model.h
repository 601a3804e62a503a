// The statistics panel's headless model: per operator kind, over the executions of one
// run that start inside a time range, the count, total, mean, p50 and p99 of the
// durations, the kind's share of the SM time in the range, and the idle time on each
// worker right before each execution of the kind. Also a duration histogram for one
// kind. No ImGui here, so tests check the numbers directly.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "traces/trace_db.h"

namespace mpk::studio {

struct KindRow {
  std::string kind;          // operator kind ("linear", "rms_norm", ...)
  int64_t count = 0;         // executions starting in the range
  int64_t total_ns = 0;      // their summed durations
  double mean_ns = 0;
  int64_t p50_ns = 0;        // nearest-rank percentiles of the durations
  int64_t p99_ns = 0;
  double share = 0;          // total_ns / (workers * range length)
  int64_t bubble_before_ns = 0;  // summed idle gap on the worker before each execution
};

// Columns of the table, in display order.
enum class StatsColumn : int { kKind, kCount, kTotal, kMean, kP50, kP99, kShare, kBubble };
inline constexpr int kNumStatsColumns = 8;

struct DurationHistogram {
  std::string kind;
  int64_t lo_ns = 0;            // left edge of the first bin
  int64_t bin_ns = 1;           // width of every bin
  std::vector<int64_t> counts;  // executions per bin; the last bin includes its right edge
  int64_t max_count = 0;
};

class StatsModel {
 public:
  // Loads the run's executions and operators. Throws mpk::Error for an unknown run.
  StatsModel(const TraceReader& reader, int64_t run);

  int64_t run() const { return run_; }
  int64_t duration_ns() const { return duration_ns_; }
  int32_t num_workers() const { return num_workers_; }

  // Restricts the rows to executions whose start lies in [t0, t1). t1 <= t0 selects
  // the whole run. Keeps the current sort order.
  void set_range(int64_t t0, int64_t t1);
  int64_t range_begin() const { return t0_; }
  int64_t range_end() const { return t1_; }
  bool whole_run() const { return whole_; }

  // One row per kind with executions in the range, in the current order.
  const std::vector<KindRow>& rows() const { return rows_; }
  // Sums over all rows: executions, busy time, idle time before them; the range's SM
  // time (workers * length).
  int64_t total_count() const { return total_count_; }
  int64_t total_busy_ns() const { return total_busy_ns_; }
  int64_t total_bubble_ns() const { return total_bubble_ns_; }
  int64_t capacity_ns() const { return capacity_ns_; }

  // Stable sort of the rows; ties keep the previous order. Default: total, descending.
  void sort(StatsColumn column, bool ascending);
  StatsColumn sort_column() const { return sort_column_; }
  bool sort_ascending() const { return sort_ascending_; }

  // Durations of `kind` in the range, in `bins` equal bins from the shortest to the
  // longest. Empty counts when the kind has no executions in the range.
  DurationHistogram histogram(const std::string& kind, int bins) const;

 private:
  struct Sample {
    int64_t start_ns, duration_ns, gap_ns;
    int32_t kind;  // index into kinds_
  };
  void recompute();

  int64_t run_ = 0;
  int64_t duration_ns_ = 0;
  int32_t num_workers_ = 0;
  std::vector<std::string> kinds_;
  std::vector<Sample> samples_;  // ordered by start
  int64_t t0_ = 0, t1_ = 0;
  bool whole_ = true;
  std::vector<KindRow> rows_;
  int64_t total_count_ = 0, total_busy_ns_ = 0, total_bubble_ns_ = 0, capacity_ns_ = 0;
  StatsColumn sort_column_ = StatsColumn::kTotal;
  bool sort_ascending_ = false;
};

// Nearest-rank percentile (q in (0, 1]) of sorted values; 0 for none.
int64_t nearest_rank(const std::vector<int64_t>& sorted, double q);

}  // namespace mpk::studio
