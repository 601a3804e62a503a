// The per-task-kind part of calibration (traces/calibrate.h): a kind's fixed_ns and
// bytes_scale fitted to its executions, each judged against the bandwidth-sharing
// profile of the run it ran in. The prediction mirrors the simulator (docs/simulator.md,
// "Cost model"): with a ring, the streamed share of the bytes is fetched from the
// worker's previous end up to the ring's size, the rest after the start; the task's
// other bytes move after its fixed time; with positional KV-cache reads, the cache
// positions beyond the step move nothing.
#pragma once

#include <utility>
#include <vector>

#include "ir/cost_params.h"
#include "traces/service_profile.h"

namespace mpk {

// One execution as the kind fit sees it.
struct KindSample {
  const ServiceProfile* profile = nullptr;  // of its run
  double start = 0, end = 0;
  // The intervals in which the worker's weight stream could fetch ahead for it.
  const std::pair<double, double>* ahead = nullptr;
  size_t ahead_count = 0;
  // profile->at() of start and end, and the bytes one SM could stream in the intervals
  // (fit_kind fills them in).
  double served_start = 0, served_end = 0, served_ahead = 0;
  double bytes = 0;          // the task's bytes
  double cache_missing = 0;  // bytes of its KV-cache reads beyond the step's position
  double compute_ns = 0;     // flops / flops_per_ns
  double cache_share = 1;    // the share of its KV-cache positions the step has (positional
                             // reads scale its arithmetic too)
};

// How the kind's bytes move: the share streamed ahead (0: none), the ring's size, and
// whether the cache positions not written yet are left out.
struct KindShape {
  double stream_share = 0;
  double ring = 0;
  bool positional = false;
};

struct KindResult {
  double fixed_ns = 0, bytes_scale = 1;
  double rms_error_ns = 0;  // predicted against measured duration
};

// The end the model predicts for sample x (its served_* filled in).
double predict_end(const KindSample& x, const KindShape& shape, double fixed, double scale);

// Fits fixed_ns and bytes_scale to `samples` (a few thousand at most; their profiles'
// rates set). Where the data cannot tell fixed time from streaming time, base.fixed_ns
// is kept unless the best split predicts better by more than the clock's resolution. A
// kind without bytes gets its mean duration as fixed_ns.
KindResult fit_kind(std::vector<KindSample> samples, const KindShape& shape,
                    const KindCost& base);

}  // namespace mpk
