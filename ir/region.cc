// Region algebra implementation.
#include "ir/region.h"

#include <algorithm>

#include "ir/checked.h"

namespace mpk {

int64_t Region::volume() const {
  int64_t v = 1;
  for (const Range& d : dims) v = checked_mul(v, d.size(), "region volume");
  return v;
}

bool Region::empty() const {
  for (const Range& d : dims)
    if (d.empty()) return true;
  return false;
}

bool Region::overlaps(const Region& o) const {
  if (tensor != o.tensor || dims.size() != o.dims.size()) return false;
  if (empty() || o.empty()) return false;
  for (size_t i = 0; i < dims.size(); ++i)
    if (!dims[i].overlaps(o.dims[i])) return false;
  return true;
}

bool Region::contains(const Region& o) const {
  if (tensor != o.tensor || dims.size() != o.dims.size()) return false;
  if (o.empty()) return true;
  for (size_t i = 0; i < dims.size(); ++i)
    if (!dims[i].contains(o.dims[i])) return false;
  return true;
}

std::optional<Region> Region::intersect(const Region& o) const {
  if (!overlaps(o)) return std::nullopt;
  Region r{tensor, {}};
  r.dims.reserve(dims.size());
  for (size_t i = 0; i < dims.size(); ++i)
    r.dims.push_back({std::max(dims[i].lo, o.dims[i].lo), std::min(dims[i].hi, o.dims[i].hi)});
  return r;
}

Region full_region(TensorId tensor, const std::vector<int64_t>& shape) {
  Region r{tensor, {}};
  for (int64_t s : shape) r.dims.push_back({0, s});
  return r;
}

std::string format_region(const std::string& tensor_name, const Region& r) {
  std::string s = tensor_name + "[";
  for (size_t i = 0; i < r.dims.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(r.dims[i].lo) + ":" + std::to_string(r.dims[i].hi);
  }
  return s + "]";
}

std::string format_shape(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

}  // namespace mpk
