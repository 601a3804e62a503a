// The tokens of a decode run as they are produced, and when the run should end early: what
// text I/O (`mpk run --prompt TEXT`) hands an executor. A TokenSink sees each step's
// tokens [row] once, in step order; a StopCondition ends the run after the first step from
// `from_step` on at which every batch row has produced one of its tokens (EOS). The cpu
// executor feeds both as each step completes and runs no step past the stop; the gpu
// executor's kernel hands each step's tokens to the host as it makes them and stops
// itself (runtime/device/publish.cuh). docs/driver.md, docs/text.md.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace mpk {

using TokenSink = std::function<void(int64_t step, const std::vector<int32_t>& tokens)>;

struct StopCondition {
  std::vector<int32_t> tokens;  // empty: no early stop
  int64_t from_step = 0;        // earlier steps' tokens are not generated ones (the prompt's)
};

// Feeds a sink and tracks a stop condition over the steps of one run.
class StepFeed {
 public:
  StepFeed(const TokenSink& sink, const StopCondition& stop) : sink_(sink), stop_(stop) {}
  // Hands `tokens` of `step` (steps arrive in order) to the sink; false when the run
  // should end after this step.
  bool operator()(int64_t step, const std::vector<int32_t>& tokens);
  // The step after which the stop condition held, or -1.
  int64_t stopped_at() const { return stopped_at_; }

 private:
  const TokenSink& sink_;
  const StopCondition& stop_;
  std::vector<bool> row_done_;
  int64_t stopped_at_ = -1;
};

}  // namespace mpk
