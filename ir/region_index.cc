// RegionIndex implementation.
#include "ir/region_index.h"

#include <algorithm>
#include <set>
#include <utility>

namespace mpk {

RegionIndex::RegionIndex(int32_t num_tensors, const std::vector<Region>& universe)
    : tensors_(num_tensors) {
  // Per tensor and dimension, the distinct ranges seen; the key dimension is the one
  // with the most distinct ranges.
  std::vector<std::vector<std::set<std::pair<int64_t, int64_t>>>> distinct(num_tensors);
  for (const Region& r : universe) {
    if (r.tensor < 0 || r.tensor >= num_tensors) continue;
    auto& d = distinct[r.tensor];
    if (d.size() < r.dims.size()) d.resize(r.dims.size());
    for (size_t i = 0; i < r.dims.size(); ++i) d[i].insert({r.dims[i].lo, r.dims[i].hi});
  }
  for (int32_t t = 0; t < num_tensors; ++t) {
    TensorIndex& ti = tensors_[t];
    size_t best = 0;
    for (size_t i = 0; i < distinct[t].size(); ++i) {
      if (distinct[t][i].size() > best) {
        best = distinct[t][i].size();
        ti.key_dim = static_cast<int>(i);
      }
    }
    if (ti.key_dim >= 0) {
      std::set<int64_t> cuts;
      for (const auto& [lo, hi] : distinct[t][ti.key_dim]) {
        cuts.insert(lo);
        cuts.insert(hi);
      }
      ti.cuts.assign(cuts.begin(), cuts.end());
    }
    ti.segments.resize(ti.cuts.size() > 1 ? ti.cuts.size() - 1 : 1);
  }
}

std::pair<size_t, size_t> RegionIndex::span(const TensorIndex& t, const Region& r) const {
  if (t.key_dim < 0 || t.cuts.size() < 2 || static_cast<size_t>(t.key_dim) >= r.dims.size())
    return {0, t.segments.size()};
  const Range& k = r.dims[t.key_dim];
  // First segment whose end is > lo; last segment whose start is < hi.
  auto first = std::upper_bound(t.cuts.begin(), t.cuts.end(), k.lo) - t.cuts.begin();
  auto last = std::lower_bound(t.cuts.begin(), t.cuts.end(), k.hi) - t.cuts.begin();
  size_t f = first > 0 ? static_cast<size_t>(first - 1) : 0;
  size_t l = std::min(static_cast<size_t>(last), t.segments.size());
  return {f, std::max(f, l)};
}

int32_t RegionIndex::insert(const Region& region, int32_t payload) {
  const auto id = static_cast<int32_t>(records_.size());
  records_.push_back({region, payload, true});
  seen_.push_back(0);
  TensorIndex& t = tensors_.at(region.tensor);
  auto [f, l] = span(t, region);
  for (size_t s = f; s < l; ++s) t.segments[s].push_back(id);
  return id;
}

void RegionIndex::erase(int32_t record) {
  Record& rec = records_.at(record);
  if (!rec.live) return;
  rec.live = false;
  TensorIndex& t = tensors_[rec.region.tensor];
  auto [f, l] = span(t, rec.region);
  for (size_t s = f; s < l; ++s) {
    auto& seg = t.segments[s];
    seg.erase(std::remove(seg.begin(), seg.end(), record), seg.end());
  }
}

std::vector<int32_t> RegionIndex::overlapping(const Region& r) {
  std::vector<int32_t> out;
  collect(r, out);
  return out;
}

void RegionIndex::collect(const Region& r, std::vector<int32_t>& out) {
  out.clear();
  if (r.tensor < 0 || r.tensor >= static_cast<int32_t>(tensors_.size())) return;
  if (++stamp_ == 0) {
    std::fill(seen_.begin(), seen_.end(), 0);
    stamp_ = 1;
  }
  TensorIndex& t = tensors_[r.tensor];
  auto [f, l] = span(t, r);
  for (size_t s = f; s < l; ++s) {
    steps_ += static_cast<int64_t>(t.segments[s].size());
    for (int32_t id : t.segments[s]) {
      if (seen_[id] == stamp_) continue;
      seen_[id] = stamp_;
      if (records_[id].live && records_[id].region.overlaps(r)) out.push_back(id);
    }
  }
  std::sort(out.begin(), out.end());
}

}  // namespace mpk
