// Loading and naming the other ranks of a tensor-parallel launch (studio/model/other_ranks.h).
#include "studio/model/other_ranks.h"

#include "studio/model/timeline_layout.h"

namespace mpk::studio {

std::vector<OtherRank> load_other_ranks(const TraceReader& reader, const RunRecord& opened) {
  std::vector<OtherRank> out;
  if (opened.ranks <= 1) return out;
  for (const RunRecord& r : reader.rank_runs(opened.id)) {
    if (r.id == opened.id) continue;
    out.push_back({std::make_unique<TraceModel>(reader, r.id), r.rank_offset_ns - opened.rank_offset_ns});
  }
  return out;
}

int64_t launch_of(const RunRecord& r) { return r.rank == 0 ? r.id : r.rank0_run; }

std::string rank_title(const RunRecord& r) {
  const std::string k = std::to_string(r.rank);
  if (r.kind == "gpu") return "rank " + k + " (GPU " + k + ")";
  if (r.kind == "cpu") return "rank " + k + " (CPU engine " + k + ")";
  return "rank " + k;
}

std::string rank_row_label(const OtherRank& r, int32_t worker) {
  return "r" + std::to_string(r.run().rank) + " " + r.model->row_label(worker);
}

std::string rank_caption(const OtherRank& r) {
  return rank_title(r.run()) + ", run " + std::to_string(r.run().id) + ": its times " + (r.shift_ns < 0 ? "" : "+") +
         format_duration(static_cast<double>(r.shift_ns)) + " on this axis";
}

}  // namespace mpk::studio
