// The search of `mpk tune` (docs/tune.md): Bayesian optimisation with a tree-structured
// Parzen estimator over the space of driver/tune_space.h, the calibrated simulator as the
// surrogate. After the default and a start of points that change one to three of its
// settings at random, each proposal is the best of many
// samples drawn from the value frequencies of the best quarter of the candidates so far,
// scored by how much likelier its values are among those than among the rest (ordered
// values lend weight to their neighbours); every fourth proposal is a local move around
// the best (one or two settings to a neighbouring value). Candidates are simulated for
// `search_steps` steps; at the end the best `finalists` and the default are compiled and
// verified, checked by the megakernel generator where this build has it, and simulated
// for `final_steps` steps: the fastest of them is the best (a second rung of successive
// halving). Finalists are the fastest candidates within 5 % of the default or better.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "driver/tune_compile.h"
#include "driver/tune_space.h"
#include "ir/cost_params.h"

namespace mpk {

struct TuneSettings {
  int64_t max_candidates = 0;  // search evaluations (the default included); 0: no limit
  double max_seconds = 0;      // wall time for the whole search; 0: no limit
  int32_t search_steps = 4;
  int32_t final_steps = 16;
  int32_t finalists = 6;
  uint64_t seed = 1;
  CostParams costs;            // what the surrogate simulates with
};

struct TuneCandidate {
  TunePoint point;
  std::string pipeline;  // the text
  std::string options;   // describe_point
  std::string how;       // "default", "start", "model", "local"
  double step_ns = std::numeric_limits<double>::infinity();  // at search_steps
  double final_step_ns = -1;   // at final_steps (finalists and the default)
  std::string error;           // why it did not compile, verify or simulate
  int64_t tasks = 0;
  bool finalist = false;
};

struct TuneResult {
  std::vector<TuneCandidate> candidates;  // in evaluation order; [0] is the default
  size_t best = 0;                        // the fastest finalist at final_steps
  double seconds = 0;
};

// Called after every evaluation, with the phase ("search", "finalists").
using TuneProgress = std::function<void(const TuneResult& so_far, const std::string& phase)>;

// Throws mpk::Error when the default itself does not compile or simulate.
TuneResult run_tune(const TuneSpace& space, TuneCompiler& compiler, const TuneSettings& settings,
                    const TuneProgress& progress = nullptr);

}  // namespace mpk
