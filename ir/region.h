// Region algebra: a half-open box per dimension on one tensor, e.g. x[0:1, 128:256].
// Regions are what tasks read and write; their overlaps are the dependencies.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/types.h"

namespace mpk {

// Half-open interval [lo, hi). Empty when hi <= lo.
struct Range {
  int64_t lo = 0;
  int64_t hi = 0;

  int64_t size() const { return hi > lo ? hi - lo : 0; }
  bool empty() const { return hi <= lo; }
  bool overlaps(const Range& o) const { return lo < o.hi && o.lo < hi && !empty() && !o.empty(); }
  bool contains(const Range& o) const { return o.empty() || (lo <= o.lo && o.hi <= hi); }
  bool operator==(const Range&) const = default;
};

struct Region {
  TensorId tensor = -1;
  std::vector<Range> dims;

  int64_t volume() const;
  bool empty() const;
  // Same tensor, same rank, and every dimension overlaps.
  bool overlaps(const Region& o) const;
  // Same tensor and o lies inside this region (an empty o is contained).
  bool contains(const Region& o) const;
  std::optional<Region> intersect(const Region& o) const;
  bool operator==(const Region&) const = default;
};

// The whole tensor of the given shape.
Region full_region(TensorId tensor, const std::vector<int64_t>& shape);

// "name[0:1, 128:256]"; a rank-0 region prints as "name[]".
std::string format_region(const std::string& tensor_name, const Region& r);

// "[1, 4096]"; a rank-0 shape prints as "[]".
std::string format_shape(const std::vector<int64_t>& shape);

}  // namespace mpk
