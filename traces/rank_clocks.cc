// Rank clock alignment from the cross-rank dependencies; see rank_clocks.h.
#include "traces/rank_clocks.h"

#include <algorithm>
#include <limits>

#include "ir/error.h"
#include "ir/ops/tensor_parallel.h"

namespace mpk {

std::vector<RankClock> align_rank_clocks(const Module& m, std::vector<Execution>& execs) {
  constexpr int64_t kNone = std::numeric_limits<int64_t>::max();
  const int32_t ranks = static_cast<int32_t>(tp_ranks(m));
  const size_t tasks = m.graph.tasks.size();
  int32_t steps = 0;
  for (const Execution& x : execs) {
    if (x.rank < 0 || x.rank >= ranks || x.task < 0 || static_cast<size_t>(x.task) >= tasks || x.step < 0)
      throw Error("rank clocks: execution of task " + std::to_string(x.task) + " at step " +
                  std::to_string(x.step) + " on rank " + std::to_string(x.rank) + " is not of the module");
    steps = std::max(steps, x.step + 1);
  }
  // where[(rank * tasks + task) * steps + step]: the execution's index, or -1.
  std::vector<int64_t> where(static_cast<size_t>(ranks) * tasks * static_cast<size_t>(steps), -1);
  auto slot = [&](int32_t rank, TaskId t, int32_t step) -> int64_t& {
    return where[(static_cast<size_t>(rank) * tasks + static_cast<size_t>(t)) * steps + step];
  };
  for (size_t i = 0; i < execs.size(); ++i) slot(execs[i].rank, execs[i].task, execs[i].step) = static_cast<int64_t>(i);

  std::vector<RankClock> clocks(static_cast<size_t>(ranks));
  for (int32_t r = 0; r < ranks; ++r) clocks[r] = {r, -kNone, kNone, false, 0};
  std::vector<int64_t> last_end(static_cast<size_t>(ranks)), first_start(static_cast<size_t>(ranks));
  for (const Event& e : m.graph.events) {
    if (!e.all_ranks) continue;
    for (int32_t k = e.step_distance; k < steps; ++k) {
      for (int32_t r = 0; r < ranks; ++r) {
        last_end[r] = -kNone;
        first_start[r] = kNone;
        for (TaskId p : e.producers)
          if (int64_t i = slot(r, p, k - e.step_distance); i >= 0) last_end[r] = std::max(last_end[r], execs[i].end_ns);
        for (TaskId c : e.consumers)
          if (int64_t i = slot(r, c, k); i >= 0) first_start[r] = std::min(first_start[r], execs[i].start_ns);
      }
      for (int32_t r = 1; r < ranks; ++r) {
        RankClock& c = clocks[r];
        if (last_end[0] != -kNone && first_start[r] != kNone) {  // rank 0 -> r
          c.lo_ns = std::max(c.lo_ns, last_end[0] - first_start[r]);
          c.bounded = true;
        }
        if (last_end[r] != -kNone && first_start[0] != kNone) {  // r -> rank 0
          c.hi_ns = std::min(c.hi_ns, first_start[0] - last_end[r]);
          c.bounded = true;
        }
      }
    }
  }
  for (RankClock& c : clocks) {
    if (!c.bounded || (c.lo_ns <= 0 && 0 <= c.hi_ns)) continue;
    if (c.lo_ns == -kNone) c.offset_ns = c.hi_ns;       // only r -> 0 seen: the latest it may be
    else if (c.hi_ns == kNone) c.offset_ns = c.lo_ns;   // only 0 -> r seen
    else c.offset_ns = c.lo_ns + (c.hi_ns - c.lo_ns) / 2;
  }
  for (Execution& x : execs) {
    const int64_t d = clocks[x.rank].offset_ns;
    x.wait_begin_ns += d;
    x.start_ns += d;
    x.end_ns += d;
  }
  return clocks;
}

}  // namespace mpk
