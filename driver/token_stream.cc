// Feeding a run's tokens and its stop condition (driver/token_stream.h).
#include "driver/token_stream.h"

#include <algorithm>

namespace mpk {

bool StepFeed::operator()(int64_t step, const std::vector<int32_t>& tokens) {
  if (sink_) sink_(step, tokens);
  if (stop_.tokens.empty() || step < stop_.from_step || stopped_at_ >= 0) return stopped_at_ < 0;
  row_done_.resize(tokens.size(), false);
  bool all = true;
  for (size_t b = 0; b < tokens.size(); ++b) {
    if (std::find(stop_.tokens.begin(), stop_.tokens.end(), tokens[b]) != stop_.tokens.end())
      row_done_[b] = true;
    all = all && row_done_[b];
  }
  if (all) stopped_at_ = step;
  return !all;
}

}  // namespace mpk
