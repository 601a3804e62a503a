// Tensor-parallel decode on the GPU (runtime/gpu/tp_megakernel.h) against the CPU's ranks
// (run_cpu_tp). At batch 1 every rank's linears run the exact CUDA-core order and the
// all_reduce adds the partials in rank order on both, so the GPU's tokens and logits are
// the CPU's bit for bit, at every rank count; and the run passes the fidelity gate
// against the unsharded model. One rank (shard-tp{ranks=1}) runs the new paths on one
// GPU: all_ranks waits and system-scope triggers in plain memory, and, through a one-rank
// TpGroup, in NCCL's symmetric memory. TpMegakernelMultiGpu needs 2 GPUs (and 4 for its
// 4-rank case); a peer that stops early leaves the other rank to its watchdog, which
// names the rank (and the peer, when the wait it stopped was one on a peer's counter);
// traced, every rank's trace lands on one time axis, one run per rank in trace.db.
#include <gtest/gtest.h>

#include <cstdio>

#include "ir/ops/tensor_parallel.h"
#include "runtime/gpu/tp_group.h"
#include "runtime/gpu/tp_megakernel.h"
#include "tests/gpu/gpu_test_util.h"
#include "tests/runtime/fidelity_gate.h"
#include "tests/runtime/runtime_test_util.h"
#include "tests/traces/cross_rank_order.h"
#include "traces/rank_clocks.h"
#include "traces/trace_db.h"

namespace mpk {
namespace {

using namespace gputest;

Module sharded(const Module& whole, int64_t ranks, const std::string& policy = "critical-path") {
  Module m = whole;
  PassManager(parse_pipeline("shard-tp{ranks=" + std::to_string(ranks) + "}," + default_pipeline_with(policy)))
      .run(m);
  return m;
}

std::vector<Weights> rank_weights(const Module& m, const Weights& whole) {
  std::vector<Weights> out;
  for (int64_t r = 0; r < tp_ranks(m); ++r) out.push_back(shard_weights(m, whole, r));
  return out;
}

CpuExecResult cpu_ranks(const Module& m, const std::vector<Weights>& w, int64_t steps, const std::vector<int64_t>& prompt) {
  CpuRunOptions o;
  o.steps = steps;
  o.prompt = prompt;
  o.threads = 4;
  o.check_races = false;
  return run_cpu_tp(m, w, o);
}

GpuRunOptions gpu_run(int64_t steps, const std::vector<int64_t>& prompt) {
  GpuRunOptions o;
  o.steps = steps;
  o.prompt = prompt;
  return o;
}

TEST(TpMegakernelGpu, OneRankRunsTheTensorParallelPathsBitForBit) {
  MPK_REQUIRE_GPU();
  for (const char* preset : {"tiny", "tiny-qwen3"}) {
    SCOPED_TRACE(preset);
    const Module whole = import_model(preset, ImportOptions{});
    const Weights w = random_weights(whole, 11);
    const Module m = sharded(whole, 1);
    const std::vector<Weights> ranks = rank_weights(m, w);
    const std::vector<int64_t> prompt = {1, 7, 3};
    const CpuExecResult cpu = cpu_ranks(m, ranks, 48, prompt);
    GpuMegakernel plain(m, ranks[0]);  // all_ranks events in plain device memory
    const GpuRunResult a = plain.run(gpu_run(48, prompt));
    EXPECT_TRUE(same_tokens(a.tokens, cpu.tokens));
    EXPECT_EQ(a.logits, cpu.logits);
    GpuTpMegakernel group(m, ranks);  // the same in a one-rank NCCL group's symmetric arena
    const GpuRunResult b = group.run(gpu_run(48, prompt));
    EXPECT_TRUE(same_tokens(b.tokens, cpu.tokens));
    EXPECT_EQ(b.logits, cpu.logits);
  }
}

TEST(TpMegakernelMultiGpu, RanksMatchTheCpuRanksBitForBitAndPassTheGate) {
  MPK_REQUIRE_GPUS(2);
  struct Case {
    Module whole;
    int64_t ranks;
  };
  std::vector<Case> cases = {{import_model("tiny", ImportOptions{}), 2},
                             {import_model("tiny-qwen3", ImportOptions{}), 2},
                             {test::tiny_with_eight_heads(), 2}};
  if (gpu_count() >= 4) cases.push_back({test::tiny_with_eight_heads(), 4});
  for (const Case& c : cases) {
    SCOPED_TRACE(c.whole.name + " at tp " + std::to_string(c.ranks));
    const Weights w = random_weights(c.whole, 5);
    const std::vector<int64_t> prompt = {3, 1, 4, 1, 5};
    const int64_t steps = 64;
    GpuRunResult first;
    for (const char* policy : {"critical-path", "round-robin"}) {
      const Module m = sharded(c.whole, c.ranks, policy);
      const std::vector<Weights> ranks = rank_weights(m, w);
      const CpuExecResult cpu = cpu_ranks(m, ranks, steps, prompt);
      GpuTpMegakernel g(m, ranks);
      GpuRunResult r = g.run(gpu_run(steps, prompt));
      EXPECT_TRUE(same_tokens(r.tokens, cpu.tokens)) << policy;
      EXPECT_EQ(r.logits, cpu.logits) << policy;
      const GpuRunResult again = g.run(gpu_run(steps, prompt));
      EXPECT_EQ(again.logits, r.logits) << policy << ": a second run";
      if (first.tokens.empty()) {
        first = std::move(r);
        fidelity::check(c.whole, w, prompt, 1, {first.tokens, first.logits, steps - 1}, c.whole.name);
      } else {
        EXPECT_EQ(r.logits, first.logits) << policy << " against critical-path";
      }
    }
  }
}

// With tracing on, every rank records its trace; on one time axis (traces/rank_clocks.h)
// every task that waits on an all_ranks event starts after every rank's producers of it
// end, and trace.db stores one run per rank.
TEST(TpMegakernelMultiGpu, EveryRankRecordsItsTraceOnOneTimeAxis) {
  MPK_REQUIRE_GPUS(2);
  const Module whole = import_model("tiny", ImportOptions{});
  const Module m = sharded(whole, 2);
  GpuTpMegakernel g(m, rank_weights(m, random_weights(whole, 2)));
  GpuRunOptions o = gpu_run(8, {1, 2});
  o.trace = true;
  const GpuRunResult r = g.run(o);
  ASSERT_EQ(r.trace_overflow, 0u);
  ASSERT_EQ(r.peer_traces.size(), 1u);
  std::vector<Execution> execs;
  for (int32_t rank = 0; rank < 2; ++rank) {
    const std::vector<abi::TraceRecord>& t = rank == 0 ? r.trace : r.peer_traces[0];
    EXPECT_EQ(t.size(), 8 * m.graph.tasks.size()) << "rank " << rank;
    for (const abi::TraceRecord& x : t)
      execs.push_back({x.task, x.step, x.worker, x.sm, static_cast<int64_t>(x.wait_begin_ns),
                       static_cast<int64_t>(x.start_ns), static_cast<int64_t>(x.end_ns), rank});
  }
  const std::vector<RankClock> clocks = align_rank_clocks(m, execs);
  std::printf("rank 1's clock: offsets allowed [%lld, %lld] ns, applied %lld\n", static_cast<long long>(clocks[1].lo_ns),
              static_cast<long long>(clocks[1].hi_ns), static_cast<long long>(clocks[1].offset_ns));
  ASSERT_TRUE(clocks[1].bounded);
  EXPECT_LE(clocks[1].lo_ns, clocks[1].hi_ns) << "the ranks' traces contradict each other";
  const int64_t pairs = testing::check_cross_rank_order(m, execs);
  EXPECT_GT(pairs, 0);
  const std::string path = ::testing::TempDir() + "tp_trace.db";
  std::remove(path.c_str());
  RunInfo info;
  info.kind = "gpu";
  const int64_t id = write_run(path, m, info, execs);
  const std::vector<RunRecord> runs = TraceReader(path).rank_runs(id);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[1].num_executions, static_cast<int64_t>(8 * m.graph.tasks.size()));
  std::remove(path.c_str());
}

// Rank 1 runs 2 steps and stops; rank 0, running 16, waits at step 2 for rank 1's partials
// (and what follows them) until its watchdog stops it.
TEST(TpMegakernelMultiGpu, APeerThatStopsLeavesTheOtherRankToItsWatchdog) {
  MPK_REQUIRE_GPUS(2);
  const Module whole = import_model("tiny", ImportOptions{});
  const Module m = sharded(whole, 2);
  const std::vector<Weights> ranks = rank_weights(m, random_weights(whole, 1));
  TpGroup group(2, tp_arena_layout(m).bytes);
  std::vector<std::unique_ptr<GpuMegakernel>> kernels(2);
  run_on_ranks(2, [&](int r) {
    GpuOptions o;
    o.watchdog_s = 0.5;
    o.rank = {r, r, 2, group.arena(r), {}};
    for (uint64_t b : group.peer_bases(r)) o.rank.peer_delta.push_back(static_cast<int64_t>(b - group.peer_bases(r)[r]));
    kernels[r] = std::make_unique<GpuMegakernel>(m, ranks[r], o);
  });
  std::string error;
  try {
    run_on_ranks(2, [&](int r) { kernels[r]->run(gpu_run(r == 0 ? 16 : 2, {1})); });
  } catch (const Error& e) {
    error = e.what();
  }
  EXPECT_EQ(error.rfind("rank 0: watchdog: ", 0), 0u) << error;
  EXPECT_NE(error.find("at step 2 "), std::string::npos) << error;
  std::printf("the watchdog said: %s\n", error.c_str());
  run_on_ranks(2, [&](int r) { kernels[r].reset(); });
}

}  // namespace
}  // namespace mpk
