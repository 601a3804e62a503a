// A tensor-parallel launch recorded on the GPU (tests/data/gpu/tiny-tp2-h200.db: tiny at
// tp 2 on two H200s, 8 steps, `device_check.sh tptrace`): its two runs put every rank on
// rank 0's time axis, where every wait on an all_ranks event starts after both ranks'
// producers end (the GPUs' clocks, milliseconds apart, were aligned before it was stored:
// traces/rank_clocks.h); a rank's calibration run carries its peer's executions, and
// calibration finds the link latency from the cross-GPU waits.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "tests/traces/cross_rank_order.h"
#include "traces/calibrate.h"
#include "traces/trace_db.h"

namespace mpk {
namespace {

std::string recorded() {
  return (std::filesystem::path(MPK_SOURCE_DIR) / "tests" / "data" / "gpu" / "tiny-tp2-h200.db").string();
}

TEST(RankTrace, EveryCrossRankWaitIsInOrderOnRankZerosAxis) {
  const TraceReader reader(recorded());
  const std::vector<RunRecord> ranks = reader.rank_runs(1);
  ASSERT_EQ(ranks.size(), 2u);
  EXPECT_EQ(ranks[1].rank0_run, ranks[0].id);
  EXPECT_NE(ranks[0].device.name.find("H200"), std::string::npos);
  // The offset the driver added to rank 1's clock: milliseconds, more than any wait.
  const size_t at_clock = ranks[1].options.find("rank_clock_ns=0,");
  ASSERT_NE(at_clock, std::string::npos) << ranks[1].options;
  EXPECT_GT(std::llabs(std::stoll(ranks[1].options.substr(at_clock + 16))), 1'000'000);
  std::vector<Execution> execs;
  for (const RunRecord& r : ranks)
    for (Execution x : reader.executions(r.id)) {
      x.start_ns += r.rank_offset_ns;
      x.end_ns += r.rank_offset_ns;
      x.rank = r.rank;
      execs.push_back(x);
    }
  const int64_t pairs = testing::check_cross_rank_order(*reader.stored_module(1), execs);
  EXPECT_GT(pairs, 1000);
}

TEST(RankTrace, CalibrationFindsTheLinkLatencyFromThePeersWaits) {
  const TraceReader reader(recorded());
  const CalibrationRun one = load_calibration_run(reader, 1);
  EXPECT_EQ(one.peers.size(), reader.executions(2).size());
  for (const Execution& x : one.peers) ASSERT_EQ(x.rank, 1);
  std::vector<CalibrationRun> runs = {one, load_calibration_run(reader, 2)};
  const Calibration cal = calibrate(runs, CostParams::from_machine(one.module.machine));
  EXPECT_GT(cal.link_samples, 20);
  EXPECT_GT(cal.params.link_latency_ns, 200);   // NVLink: about a microsecond more than on one GPU
  EXPECT_LT(cal.params.link_latency_ns, 5000);
}

}  // namespace
}  // namespace mpk
