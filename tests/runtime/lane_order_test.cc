// The canonical reduction order (runtime/cpu/lane_order.h): it is the order a GPU warp
// adds in, not the ascending order, and every kernel that uses it agrees bit for bit.
#include "runtime/cpu/lane_order.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace mpk {
namespace {

// A warp simulated step by step: lanes load 8 elements per 256-element stripe, sum their
// accumulators, then exchange with __shfl_xor partners.
float warp_simulation(const std::vector<float>& a, const std::vector<float>& b) {
  float acc[32][8] = {};
  for (size_t stripe = 0; stripe < a.size(); stripe += 256)
    for (int lane = 0; lane < 32; ++lane)
      for (int j = 0; j < 8; ++j) {
        const size_t k = stripe + 8 * lane + j;
        if (k < a.size()) acc[lane][j] += a[k] * b[k];
      }
  float v[32];
  for (int lane = 0; lane < 32; ++lane) {
    v[lane] = acc[lane][0];
    for (int j = 1; j < 8; ++j) v[lane] += acc[lane][j];
  }
  for (int off = 16; off >= 1; off /= 2) {
    float shuffled[32];
    for (int lane = 0; lane < 32; ++lane) shuffled[lane] = v[lane ^ off];
    for (int lane = 0; lane < 32; ++lane) v[lane] += shuffled[lane];
  }
  return v[0];
}

TEST(LaneOrder, DiffersFromAscendingOrderWhereRoundingShows) {
  std::vector<float> a(24, 0.f), ones(24, 1.f);
  a[0] = 1e8f;   // lane 0
  a[8] = -1e8f;  // lane 1
  a[16] = 1.f;   // lane 2: meets lane 0 first in the butterfly and is lost
  float ascending = 0;
  for (float v : a) ascending += v;
  EXPECT_EQ(ascending, 1.f);
  EXPECT_EQ(lane_dot(a.data(), ones.data(), 24), 0.f);
}

TEST(LaneOrder, MatchesASimulatedWarpOnRandomData) {
  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0.f, 3.f);
  for (int n : {8, 64, 128, 256, 264, 2048, 4104}) {
    std::vector<float> a(n), b(n);
    for (int i = 0; i < n; ++i) {
      a[i] = dist(rng);
      b[i] = dist(rng);
    }
    EXPECT_EQ(lane_dot(a.data(), b.data(), n), warp_simulation(a, b)) << "n = " << n;
    EXPECT_EQ(lane_sum_squares(a.data(), n), warp_simulation(a, a)) << "n = " << n;
  }
}

}  // namespace
}  // namespace mpk
