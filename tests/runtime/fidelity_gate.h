// The fidelity gate of docs/ir.md ("Exactness"): a run that cannot be bit-identical to
// the CPU reference (the GPU's tensor-core linears above batch 1, and the CPU against
// them) is held to the f64 interpreter of the same graph (naive_f64.h). The interpreter
// is fed the run's own tokens, row by row, so that a near tie that picks another token
// does not send the two down different paths; then at every step the run's token is the
// reference's argmax or within the bound of it (a near tie, counted), and every logit
// the run reports is within the bound of the reference's.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "ir/module.h"
#include "runtime/weights/weights.h"
#include "tests/runtime/naive_f64.h"

namespace mpk::fidelity {

inline constexpr double kLogitBound = 1.0 / 32;  // of the reference's largest |logit| of the step

// What a run produced: its tokens [step][row], and its logits [B * V] of the steps
// first_logit_step, first_logit_step + 1, ... (every step, or the last one alone).
struct Observed {
  std::vector<std::vector<int32_t>> tokens;
  std::vector<float> logits;
  int64_t first_logit_step = 0;
};

struct Verdict {
  double worst = 0;    // the largest logit difference over the step's largest |logit|
  int64_t near_ties = 0;  // steps x rows whose token was not the reference's argmax but within the bound
};

// Checks `run` of `m` (prompt: `prompt_rows` rows, 1 or the batch) against the f64
// interpreter fed the run's tokens; adds a test failure per violation, naming `what`.
inline Verdict check(const Module& m, const Weights& w, const std::vector<int64_t>& prompt, int64_t prompt_rows,
                     const Observed& run, const std::string& what) {
  const int64_t steps = static_cast<int64_t>(run.tokens.size());
  const int64_t batch = steps > 0 ? static_cast<int64_t>(run.tokens[0].size()) : 0;
  const int64_t len = static_cast<int64_t>(prompt.size()) / prompt_rows;
  // Row b replays its prompt, then the tokens the run generated (docs/ir.md, "Module").
  std::vector<int64_t> replay;
  const int64_t replay_len = std::max(len, steps);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t s = 0; s < replay_len; ++s)
      replay.push_back(s < len ? prompt[(prompt_rows == 1 ? 0 : b) * len + s] : run.tokens[s - 1][b]);
  const naive::ModelRun ref = naive::run_model(m, w, steps, replay, batch);
  Verdict v;
  for (int64_t s = 0; s < steps; ++s) {
    const std::vector<double>& rl = ref.step_logits[s];
    const int64_t vocab = static_cast<int64_t>(rl.size()) / batch;
    double scale = 0;
    for (double x : rl) scale = std::max(scale, std::fabs(x));
    const double bound = kLogitBound * scale;
    for (int64_t b = 0; b < batch; ++b) {
      const int32_t tok = run.tokens[s][b];
      if (tok == ref.tokens[s][b]) continue;
      const bool near = tok >= 0 && tok < vocab && ref.top_logits[s][b] - rl[b * vocab + tok] <= bound;
      v.near_ties += near;
      EXPECT_TRUE(near) << what << ": step " << s << " row " << b << ": token " << tok << ", the reference's "
                        << ref.tokens[s][b];
    }
    const int64_t k = s - run.first_logit_step;
    if (k < 0 || (k + 1) * batch * vocab > static_cast<int64_t>(run.logits.size())) continue;
    for (int64_t i = 0; i < batch * vocab; ++i) {
      const double d = std::fabs(run.logits[k * batch * vocab + i] - rl[i]);
      v.worst = std::max(v.worst, scale > 0 ? d / scale : d);
      EXPECT_LE(d, bound) << what << ": step " << s << " logit " << i;
      if (d > bound) return v;  // one report per run is enough
    }
  }
  return v;
}

}  // namespace mpk::fidelity
