// How well a cost model explains recorded runs, and how well calibration predicts runs
// it has not seen (docs/simulator.md, "Validation"). Each run's scheduled graph is
// simulated with the costs for the run's steps, and its task executions are matched with
// the recorded ones by (task, step).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/cost_params.h"
#include "traces/calibrate.h"

namespace mpk {

// Per task kind: the relative error |simulated - measured| / measured of each task's
// duration, its median and 90th percentile, over every run.
struct KindError {
  TaskKind kind = TaskKind::kLinear;
  int64_t samples = 0;
  double median = 0, p90 = 0;
  double measured_mean_ns = 0, simulated_mean_ns = 0;
};

// One run: its mean makespan per step, measured and simulated.
struct RunPrediction {
  std::string label, model, policy;
  double measured_step_ns = 0, predicted_step_ns = 0;
  double error() const {
    return measured_step_ns > 0 ? (predicted_step_ns - measured_step_ns) / measured_step_ns : 0;
  }
};

struct ModelError {
  std::vector<KindError> kinds;     // kinds with executions, in TaskKind order
  std::vector<RunPrediction> runs;  // in the order given
};

// Throws mpk::Error from the simulator (e.g. a deadlock) naming the run.
ModelError model_error(const std::vector<CalibrationRun>& runs, const CostParams& costs);

// Leave-one-out by (model, policy) pair: each pair's runs are predicted by the costs
// calibrated (over `base`) on the runs of every other pair. One prediction per pair: its
// runs' measured and predicted step times averaged. Throws mpk::Error for fewer than two
// pairs.
struct PairPrediction {
  RunPrediction prediction;  // label: the number of runs, e.g. "2 runs"
  int64_t runs = 0;
};
std::vector<PairPrediction> leave_one_pair_out(const std::vector<CalibrationRun>& runs,
                                               const CostParams& base);

// The policies of one model by step time, fastest first, measured and predicted. Two
// policies whose measured step times are within kRankingTie of each other are tied:
// either order agrees with the measurement.
inline constexpr double kRankingTie = 0.005;
struct Ranking {
  std::string model;
  std::vector<std::string> measured, predicted;
  std::vector<double> measured_ns;  // by measured order
  // Whether the predicted order puts every pair of untied policies as measured.
  bool same() const;
  // "a < b = c": the measured order, ties joined by "=".
  std::string measured_text() const;
};
std::vector<Ranking> rankings(const std::vector<PairPrediction>& pairs);

}  // namespace mpk
