// The bytes one busy SM could stream over a recorded run: from the run's executions, how
// many SMs were busy at each instant, and under the cost model's sharing rule
// (ir/cost_params.h shared_rate) the cumulative service one SM got. Calibration judges a
// task's bytes against it (traces/calibrate.h).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "ir/cost_params.h"
#include "traces/trace_db.h"

namespace mpk {

class ServiceProfile {
 public:
  // Busy intervals: each execution from start to end, plus `extra` [begin, end) intervals
  // (e.g. weight streams running ahead of a task's start).
  explicit ServiceProfile(const std::vector<Execution>& execs,
                          const std::vector<std::pair<double, double>>& extra = {});

  // Recomputes the cumulative service for the bandwidths in `c`.
  void set_rates(const CostParams& c);
  // Bytes one busy SM was served from the run's start to t.
  double at(double t) const;
  // The time at which `amount` more bytes have been served after t0.
  double finish(double t0, double amount) const { return amount <= 0 ? t0 : time_of(at(t0) + amount); }
  // The time at which at() reaches `served`.
  double time_of(double served) const;

 private:
  std::vector<double> times_;
  std::vector<int64_t> busy_;
  std::vector<double> rates_, served_;
  double rate_one_ = 1;
};

}  // namespace mpk
