// Property tests of the region algebra (ir/region.h) over many random shapes, checked
// against point-by-point enumeration, and of RegionIndex (ir/region_index.h) against a
// brute-force scan under random inserts, erases and queries.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "ir/region.h"
#include "ir/region_index.h"

namespace mpk {
namespace {

// A random box of rank `rank` inside a tensor of `shape`, sometimes empty.
Region random_region(std::mt19937& rng, TensorId t, const std::vector<int64_t>& shape) {
  Region r{t, {}};
  for (int64_t n : shape) {
    std::uniform_int_distribution<int64_t> d(0, n);
    int64_t lo = d(rng), hi = d(rng);
    if (lo > hi) std::swap(lo, hi);
    r.dims.push_back({lo, hi});
  }
  return r;
}

std::vector<int64_t> random_shape(std::mt19937& rng, int max_rank, int64_t max_dim) {
  std::uniform_int_distribution<int> rank(0, max_rank);
  std::uniform_int_distribution<int64_t> dim(1, max_dim);
  std::vector<int64_t> s(rank(rng));
  for (int64_t& d : s) d = dim(rng);
  return s;
}

bool holds(const Region& r, const std::vector<int64_t>& point) {
  for (size_t i = 0; i < point.size(); ++i)
    if (point[i] < r.dims[i].lo || point[i] >= r.dims[i].hi) return false;
  return true;
}

// Calls f(point) for every point of the tensor.
template <typename F>
void for_each_point(const std::vector<int64_t>& shape, F&& f) {
  std::vector<int64_t> p(shape.size(), 0);
  while (true) {
    f(p);
    size_t i = shape.size();
    while (i > 0 && ++p[i - 1] == shape[i - 1]) p[--i] = 0;
    if (i == 0) return;
  }
}

TEST(RegionProperties, AgreeWithPointEnumeration) {
  std::mt19937 rng(1234);
  for (int iter = 0; iter < 3000; ++iter) {
    const std::vector<int64_t> shape = random_shape(rng, 3, 6);
    const Region a = random_region(rng, 0, shape), b = random_region(rng, 0, shape);
    int64_t in_a = 0, in_b = 0, in_both = 0;
    bool b_inside_a = true;
    for_each_point(shape, [&](const std::vector<int64_t>& p) {
      const bool ia = holds(a, p), ib = holds(b, p);
      in_a += ia;
      in_b += ib;
      in_both += ia && ib;
      if (ib && !ia) b_inside_a = false;
    });
    SCOPED_TRACE(format_region("a", a) + " " + format_region("b", b));
    EXPECT_EQ(a.volume(), in_a);
    EXPECT_EQ(a.empty(), in_a == 0);
    EXPECT_EQ(a.overlaps(b), in_both > 0);
    EXPECT_EQ(a.overlaps(b), b.overlaps(a));
    EXPECT_EQ(a.contains(b), b_inside_a);
    if (a.contains(b) && !b.empty()) {
      EXPECT_TRUE(a.overlaps(b));
    }
    const auto i = a.intersect(b);
    ASSERT_EQ(i.has_value(), a.overlaps(b));
    if (i) {
      EXPECT_EQ(i->volume(), in_both);
      EXPECT_TRUE(a.contains(*i));
      EXPECT_TRUE(b.contains(*i));
      EXPECT_EQ(b.intersect(a), i);
    }
  }
}

TEST(RegionProperties, DifferentTensorsOrRanksNeverOverlap) {
  std::mt19937 rng(99);
  for (int iter = 0; iter < 500; ++iter) {
    const std::vector<int64_t> shape = random_shape(rng, 3, 8);
    const Region a = random_region(rng, 0, shape);
    Region b = a;
    b.tensor = 1;
    EXPECT_FALSE(a.overlaps(b));
    EXPECT_FALSE(a.contains(b));
    EXPECT_FALSE(a.intersect(b).has_value());
    Region c = a;
    c.dims.push_back({0, 1});
    EXPECT_FALSE(a.overlaps(c));
  }
}

TEST(RegionProperties, FullRegionAndFormat) {
  const Region full = full_region(3, {2, 128, 4});
  EXPECT_EQ(full.tensor, 3);
  EXPECT_EQ(full.volume(), 2 * 128 * 4);
  EXPECT_EQ(format_region("x", full), "x[0:2, 0:128, 0:4]");
  EXPECT_EQ(format_region("x", Region{0, {{0, 1}, {128, 256}}}), "x[0:1, 128:256]");
  EXPECT_EQ(format_region("s", full_region(0, {})), "s[]");
  EXPECT_EQ(full_region(0, {}).volume(), 1);
  EXPECT_TRUE(full.contains(Region{3, {{1, 2}, {5, 9}, {0, 4}}}));
  EXPECT_TRUE(full.contains(Region{3, {{1, 1}, {5, 9}, {0, 4}}}));  // empty is contained
}

TEST(RegionIndexProperties, OverlappingMatchesBruteForce) {
  std::mt19937 rng(4321);
  for (int round = 0; round < 40; ++round) {
    const int num_tensors = 1 + round % 4;
    std::vector<std::vector<int64_t>> shapes;
    for (int t = 0; t < num_tensors; ++t) shapes.push_back(random_shape(rng, 4, 40));
    std::uniform_int_distribution<int> pick_tensor(0, num_tensors - 1);
    std::vector<Region> universe;
    for (int i = 0; i < 300; ++i) {
      const int t = pick_tensor(rng);
      universe.push_back(random_region(rng, t, shapes[t]));
    }
    RegionIndex index(num_tensors, universe);
    struct Live {
      int32_t record;
      Region region;
      int32_t payload;
    };
    std::vector<Live> live;
    std::uniform_int_distribution<size_t> pick(0, universe.size() - 1);
    std::uniform_int_distribution<int> action(0, 9);
    for (int step = 0; step < 600; ++step) {
      const int a = action(rng);
      if (a < 4) {
        const Region& r = universe[pick(rng)];
        const int32_t id = index.insert(r, step);
        live.push_back({id, r, step});
        EXPECT_EQ(index.region(id), r);
        EXPECT_EQ(index.payload(id), step);
      } else if (a < 6 && !live.empty()) {
        std::uniform_int_distribution<size_t> which(0, live.size() - 1);
        const size_t k = which(rng);
        index.erase(live[k].record);
        live.erase(live.begin() + static_cast<long>(k));
      } else {
        const Region& q = universe[pick(rng)];
        std::vector<int32_t> expected;
        for (const Live& l : live)
          if (l.region.overlaps(q)) expected.push_back(l.record);
        std::sort(expected.begin(), expected.end());
        ASSERT_EQ(index.overlapping(q), expected) << "round " << round << " step " << step;
        std::vector<int32_t> visited;
        index.for_each_overlap(q, [&](int32_t id, int32_t payload, const Region& r) {
          visited.push_back(id);
          EXPECT_EQ(payload, index.payload(id));
          EXPECT_TRUE(r.overlaps(q));
        });
        EXPECT_EQ(visited, expected);
      }
    }
  }
}

}  // namespace
}  // namespace mpk
