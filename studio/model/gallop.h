// A galloping search: the first index of a sorted range at or after a value, searched
// outward from the range's start, so that a walk over the screen that moves right by a
// few items at a time costs O(log distance) a step rather than O(log n). The timeline's
// layout and the trace model's busy-time queries walk rows with it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace mpk::studio {

// The first index in [lo, hi) whose key(xs[i]) >= v, where key increases along the range.
template <typename T, typename Key>
int64_t gallop(const std::vector<T>& xs, int64_t lo, int64_t hi, double v, Key key) {
  if (lo >= hi || static_cast<double>(key(xs[static_cast<size_t>(lo)])) >= v) return lo;
  int64_t below = lo;  // key < v here
  int64_t probe = hi;
  for (int64_t step = 1;; step *= 2) {
    const int64_t p = below + step;
    if (p >= hi) break;
    if (static_cast<double>(key(xs[static_cast<size_t>(p)])) >= v) {
      probe = p;
      break;
    }
    below = p;
  }
  const auto it = std::partition_point(xs.begin() + below + 1, xs.begin() + probe,
                                       [&](const T& e) { return static_cast<double>(key(e)) < v; });
  return it - xs.begin();
}

}  // namespace mpk::studio
