// The compare panel's headless model: two runs (from one trace.db or two) side by side.
// It holds each run's statistics (traces/analysis.h), a table of deltas (makespan per
// step, utilization, idle time by cause, time per operator kind, critical path) and the
// TraceModel of the run that is not the current one (the state holds that one's), which
// the panel draws with the current run's on one time axis with the timeline's layout
// (studio/model/timeline_layout.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "studio/model/trace_model.h"
#include "traces/analysis.h"
#include "traces/trace_db.h"

namespace mpk::studio {

enum class DeltaUnit { kNs, kRatio, kCount };

struct DeltaRow {
  std::string group;  // "step", "idle", "kind", "critical path"
  std::string label;
  double a = 0, b = 0;
  DeltaUnit unit = DeltaUnit::kNs;
  double delta() const { return b - a; }
  // (b - a) / a; 0 when a is 0.
  double relative() const { return a != 0 ? (b - a) / a : 0; }
  // +1 when B is better than A (less time, more utilization), -1 when worse, 0 for
  // counts and changes under 0.5 %: the compare view colours them green and red.
  int better() const;
};

enum class CompareSide { kA, kB };

class CompareModel {
 public:
  // Runs `a` and `b` may come from the same reader; the model of run `load` is loaded.
  // Throws mpk::Error for an unknown run.
  CompareModel(const TraceReader& reader_a, int64_t run_a, const TraceReader& reader_b,
               int64_t run_b, CompareSide load = CompareSide::kB);

  const RunStats& stats_a() const { return a_; }
  const RunStats& stats_b() const { return b_; }
  CompareSide loaded() const { return loaded_; }
  // The loaded run's model, for drawing.
  const TraceModel& model() const { return *model_; }
  // True when both runs are of one kind (both simulated, or both measured on one backend).
  bool same_kind() const { return a_.run.kind == b_.run.kind; }
  // The longer of the two runs: the shared time axis spans [0, duration_ns()).
  int64_t duration_ns() const;
  const std::vector<DeltaRow>& deltas() const { return deltas_; }

 private:
  RunStats a_, b_;
  CompareSide loaded_;
  std::unique_ptr<TraceModel> model_;
  std::vector<DeltaRow> deltas_;
};


// "run 3: sim critical-path (tiny)".
std::string describe_run(const RunRecord& r);
// The cost model a simulated run was made with ("costs: machine-model"); "" for others.
std::string costs_of(const RunRecord& r);

}  // namespace mpk::studio
