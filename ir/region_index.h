// An interval index over the regions recorded on each tensor, for finding which
// recorded accesses overlap a new one without comparing all pairs. Each tensor is
// indexed on one key dimension (the one whose ranges vary most among the regions it is
// built from), cut into the elementary segments between all range boundaries; a record
// is listed in the segments it spans, and candidates are checked for a true box overlap.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/region.h"

namespace mpk {

class RegionIndex {
 public:
  // `universe`: every region that will ever be inserted or queried (it fixes the key
  // dimension and segment boundaries per tensor). `num_tensors`: tensor ids are below it.
  RegionIndex(int32_t num_tensors, const std::vector<Region>& universe);

  // Records `region` with a caller payload (e.g. a task id); returns the record id.
  int32_t insert(const Region& region, int32_t payload);
  void erase(int32_t record);

  // Calls f(record_id, payload, region) once for every live record overlapping `r`,
  // in increasing record id order. f must not query this index again.
  template <typename F>
  void for_each_overlap(const Region& r, F&& f) {
    collect(r, hits_);
    for (int32_t id : hits_) f(id, records_[id].payload, records_[id].region);
  }

  // Live records overlapping r, sorted by record id.
  std::vector<int32_t> overlapping(const Region& r);
  const Region& region(int32_t record) const { return records_[record].region; }
  // Candidate records examined by all queries so far (a measure of their cost).
  int64_t steps() const { return steps_; }
  int32_t payload(int32_t record) const { return records_[record].payload; }

 private:
  struct Record {
    Region region;
    int32_t payload = 0;
    bool live = false;
  };
  struct TensorIndex {
    int key_dim = -1;                       // -1: rank 0 (one segment)
    std::vector<int64_t> cuts;              // sorted unique boundaries on key_dim
    std::vector<std::vector<int32_t>> segments;  // records per [cuts[i], cuts[i+1])
  };
  // The live records overlapping r into `out` (cleared first), sorted by record id.
  void collect(const Region& r, std::vector<int32_t>& out);
  // Segment index range [first, last) spanned by r on its tensor's key dimension.
  std::pair<size_t, size_t> span(const TensorIndex& t, const Region& r) const;

  std::vector<TensorIndex> tensors_;
  std::vector<Record> records_;
  std::vector<uint32_t> seen_;  // per record: stamp of the last query that saw it
  uint32_t stamp_ = 0;
  std::vector<int32_t> hits_;  // for_each_overlap's buffer, reused across queries
  int64_t steps_ = 0;
};

}  // namespace mpk
