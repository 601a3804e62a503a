// The statistics panel's headless model: over the executions of one run that start inside
// a time range, grouped by operator kind, by operator (one layer's, or the same operator
// across layers) or by layer, the count, total, mean, p50 and p99 of the durations, the
// group's share of the SM time in the range, and the idle time on each worker right before
// each execution. A linear group (q/k/v run as one unit) is one execution, named after its
// members ("L0.q_proj+k_proj+v_proj"), so the totals add up to the busy time. Also a
// duration histogram for one row. No ImGui here, so tests check the numbers directly.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "studio/model/trace_model.h"

namespace mpk::studio {

// What a row of the table stands for.
enum class StatsGrouping : int { kKind, kOperator, kOperatorAllLayers, kLayer };
inline constexpr int kNumStatsGroupings = 4;
const char* name_of(StatsGrouping g);  // "kind", "operator", "operator, all layers", "layer"

struct StatsRow {
  std::string name;          // "linear"; "L3.q_proj"; "q_proj"; "layer 3" / "outside layers"
  int kind = -1;             // the OpKind of its executions (its colour); -1: several kinds
  int64_t count = 0;         // executions starting in the range (a linear group once)
  int64_t total_ns = 0;      // their summed durations
  double mean_ns = 0;
  int64_t p50_ns = 0;        // nearest-rank percentiles of the durations
  int64_t p99_ns = 0;
  double share = 0;          // total_ns / (workers * range length)
  int64_t bubble_before_ns = 0;  // summed idle gap on the worker before each execution
};

// Columns of the table, in display order.
enum class StatsColumn : int { kName, kCount, kTotal, kMean, kP50, kP99, kShare, kBubble };
inline constexpr int kNumStatsColumns = 8;

struct DurationHistogram {
  std::string name;
  int64_t lo_ns = 0;            // left edge of the first bin
  int64_t bin_ns = 1;           // width of every bin
  std::vector<int64_t> counts;  // executions per bin; the last bin includes its right edge
  int64_t max_count = 0;
};

class StatsModel {
 public:
  // Reads the run's executions from `m` (keeps no reference to it).
  explicit StatsModel(const TraceModel& m);

  int64_t run() const { return run_; }
  int64_t duration_ns() const { return duration_ns_; }
  int32_t num_workers() const { return num_workers_; }

  // Restricts the rows to executions whose start lies in [t0, t1). t1 <= t0 selects
  // the whole run. Keeps the current sort order.
  void set_range(int64_t t0, int64_t t1);
  int64_t range_begin() const { return t0_; }
  int64_t range_end() const { return t1_; }
  bool whole_run() const { return whole_; }

  // Groups the rows anew (default: by kind). Keeps the range and the sort order.
  void set_grouping(StatsGrouping g);
  StatsGrouping grouping() const { return grouping_; }

  // One row per group with executions in the range, in the current order.
  const std::vector<StatsRow>& rows() const { return rows_; }
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

  // Durations of the row `name` in the range, in `bins` equal bins from the shortest to
  // the longest. Empty counts when it has no executions in the range.
  DurationHistogram histogram(const std::string& name, int bins) const;

 private:
  struct Sample {
    int64_t start_ns, duration_ns, gap_ns;
    int32_t group;  // index into names_ under the current grouping
  };
  struct Unit {     // what a sample is, for grouping
    OpKind kind;
    int32_t layer;
    std::string op, op_all_layers;  // "L3.q_proj+k_proj", "q_proj+k_proj"
  };
  void regroup();
  void recompute();

  int64_t run_ = 0;
  int64_t duration_ns_ = 0;
  int32_t num_workers_ = 0;
  std::vector<Unit> units_;        // operators and linear groups met
  std::vector<int32_t> unit_of_;   // per sample, an index into units_
  std::vector<Sample> samples_;    // ordered by start
  StatsGrouping grouping_ = StatsGrouping::kKind;
  std::vector<std::string> names_;  // of the groups under the current grouping
  std::vector<int> group_kind_;     // their OpKind, or -1 for several
  int64_t t0_ = 0, t1_ = 0;
  bool whole_ = true;
  std::vector<StatsRow> rows_;
  int64_t total_count_ = 0, total_busy_ns_ = 0, total_bubble_ns_ = 0, capacity_ns_ = 0;
  StatsColumn sort_column_ = StatsColumn::kTotal;
  bool sort_ascending_ = false;
};

// Nearest-rank percentile (q in (0, 1]) of sorted values; 0 for none.
int64_t nearest_rank(const std::vector<int64_t>& sorted, double q);

}  // namespace mpk::studio
