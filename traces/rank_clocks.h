// One time axis for the ranks of a tensor-parallel launch. Each GPU stamps its trace with
// its own %globaltimer, and nothing promises that two GPUs' timers agree. The traces
// themselves bound the difference: a task that waits on an all_ranks event starts after
// every rank's producers of it end, so for ranks q and r, at every such (event, step),
//   consumer start on r + d_r >= last producer end on q + d_q,
// where d is what is added to a rank's clock. Against rank 0 (d_0 = 0) this gives each
// rank an interval [lo, hi] for d_r. Clocks that already satisfy it (0 in the interval) are
// left alone: same-host GPU timers usually agree, and then the raw stamps are the truth.
// Otherwise d_r is the interval's middle (the two directions' slack split evenly, as a
// symmetric link makes it), or its one finite bound when only one direction was seen.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/module.h"
#include "traces/trace_db.h"

namespace mpk {

struct RankClock {
  int32_t rank = 0;
  int64_t lo_ns = 0, hi_ns = 0;  // the interval of offsets the traces allow (lo > hi: they
                                 // contradict each other, e.g. clocks that drift)
  bool bounded = false;          // some cross-rank dependency constrains this rank
  int64_t offset_ns = 0;         // what was added to the rank's times
};

// Aligns every rank's execution times (Execution::rank) to rank 0's clock in place and
// returns what it did, one entry per rank (rank 0's offset is 0). `m` is the scheduled,
// sharded module the executions ran.
std::vector<RankClock> align_rank_clocks(const Module& m, std::vector<Execution>& execs);

}  // namespace mpk
