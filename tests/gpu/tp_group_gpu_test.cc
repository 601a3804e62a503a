// The tensor-parallel GPU group (runtime/gpu/tp_group.h) on real GPUs, with the NCCL that
// $MPK_NCCL_LIB (or the loader's path) names: a one-rank group on one GPU; every rank
// writing into and reading from every peer's arena through its peer base addresses; and
// a counter released on one GPU and acquired on another (runtime/device/remote.cuh).
// TpGroupMultiGpu needs 2 GPUs and uses all that are visible, up to 8.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "runtime/gpu/tp_group.h"
#include "tests/gpu/gpu_test_util.h"
#include "tests/gpu/tp_group_kernels.h"

namespace mpk {
namespace {

constexpr size_t kWords = size_t{1} << 16;  // 512 KiB a slot
constexpr double kTimeoutS = 10;            // a wait in a kernel gives up after this

TEST(TpGroupGpu, OneRankGroupGivesItsOwnArena) {
  MPK_REQUIRE_GPU();
  TpGroup g(1, kWords * sizeof(uint64_t));
  EXPECT_EQ(g.ranks(), 1);
  EXPECT_EQ(g.arena_bytes(), kWords * sizeof(uint64_t));
  ASSERT_EQ(g.peer_bases(0).size(), 1u);
  EXPECT_EQ(g.peer_bases(0)[0], reinterpret_cast<uint64_t>(g.arena(0)));
  std::vector<uint64_t> words(kWords, 1);
  MPK_CUDA(cudaMemcpy(words.data(), g.arena(0), g.arena_bytes(), cudaMemcpyDeviceToHost));
  EXPECT_EQ(std::count(words.begin(), words.end(), 0u), static_cast<long>(kWords)) << "the arena is not zeroed";
  tptest::write_slot(g.peer_bases(0), 0, kWords);
  EXPECT_EQ(tptest::count_wrong_words(g.peer_bases(0), 1, kWords), std::vector<uint64_t>{0});
  EXPECT_THROW(g.arena(1), Error);
}

TEST(TpGroupGpu, RunOnRanksNamesTheRankThatFailed) {
  MPK_REQUIRE_GPU();
  int device = -1;
  try {
    run_on_ranks(1, [&](int rank) {
      MPK_CUDA(cudaGetDevice(&device));
      throw Error("it broke");
    });
    FAIL() << "no exception";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "rank 0: it broke");
  }
  EXPECT_EQ(device, 0);
}

TEST(TpGroupMultiGpu, EveryRankReadsAndWritesEveryPeersArena) {
  MPK_REQUIRE_GPUS(2);
  const int n = std::min(gpu_count(), 8);
  TpGroup g(n, n * kWords * sizeof(uint64_t));  // slot s of every arena: written by rank s
  for (int r = 0; r < n; ++r) {
    const std::vector<uint64_t>& bases = g.peer_bases(r);
    ASSERT_EQ(bases.size(), static_cast<size_t>(n));
    EXPECT_EQ(bases[r], reinterpret_cast<uint64_t>(g.arena(r)));
    for (int q = 0; q < n; ++q) EXPECT_NE(bases[q], 0u) << "rank " << r << "'s base of rank " << q;
  }
  run_on_ranks(n, [&](int r) { tptest::write_slot(g.peer_bases(r), r, kWords); });
  std::vector<std::vector<uint64_t>> wrong(n);
  run_on_ranks(n, [&](int r) { wrong[r] = tptest::count_wrong_words(g.peer_bases(r), n, kWords); });
  for (int r = 0; r < n; ++r)
    for (int q = 0; q < n; ++q)
      EXPECT_EQ(wrong[r][q], 0u) << "rank " << r << " reading rank " << q << "'s arena (" << n << " ranks)";
}

TEST(TpGroupMultiGpu, ACounterReleasedOnOneGpuIsSeenOnAnother) {
  MPK_REQUIRE_GPUS(2);
  TpGroup g(2, (tptest::kHandoffData + kWords) * sizeof(uint64_t));
  bool saw_consumer = false;
  tptest::Consumed consumed;
  run_on_ranks(2, [&](int r) {
    if (r == 0)
      consumed = tptest::consume(g.arena(0), g.peer_bases(0)[1], kWords, kTimeoutS);
    else
      saw_consumer = tptest::produce(g.arena(1), g.peer_bases(1)[0], kWords, kTimeoutS);
  });
  EXPECT_TRUE(saw_consumer) << "rank 1 never saw rank 0's signal";
  EXPECT_TRUE(consumed.released) << "rank 0 never saw rank 1's counter";
  EXPECT_EQ(consumed.wrong_words, 0u) << "rank 0 saw the counter before rank 1's data";
}

}  // namespace
}  // namespace mpk
