// Walks each streaming descriptor's chunks in the order its task body consumes them
// (runtime/device/tasks_linear.cuh) and lays their boxes out back to back.
#include "codegen/stream_pack.h"

#include <algorithm>

namespace mpk {

StreamPlan plan_stream(const Megakernel& k, const Program& program) {
  StreamPlan plan;
  plan.offset.assign(k.tasks.size(), kNoStream);
  plan.chunk_begin.push_back(0);
  for (size_t i = 0; i < k.tasks.size(); ++i) {
    const StreamShape& st = k.stream.at(i);
    if (st.groups > 0 && st.weight >= 0) {
      plan.offset[i] = plan.bytes;
      const std::vector<TaskId> own = {static_cast<TaskId>(i)};
      const std::vector<TaskId>& members = st.members.empty() ? own : st.members;
      const bool group = members.size() > 1;
      for (int32_t g = 0; g < st.groups; ++g) {
        for (int32_t c = 0; c < st.col_chunks; ++c) {
          const uint64_t chunk_start = plan.bytes;
          const int32_t boxes = c == st.col_chunks - 1 ? st.boxes_last : st.boxes;
          for (TaskId m : members) {
            const StreamShape& ms = k.stream.at(m);
            const int32_t rows = group ? ms.box_rows : g == st.groups - 1 ? st.last_rows : st.box_rows;
            const int64_t row = ms.row0 + (group ? 0 : static_cast<int64_t>(g) * st.box_rows);
            for (TensorId weight : {ms.weight, ms.weight2}) {
              if (weight < 0) continue;
              const int32_t valid =
                  static_cast<int32_t>(std::clamp<int64_t>(program.tensor(weight).shape[0] - row, 0, rows));
              for (int32_t b = 0; b < boxes; ++b) {
                plan.boxes.push_back(
                    {weight, row, (static_cast<int64_t>(c) * st.boxes + b) * abi::kBoxCols, rows, valid, plan.bytes});
                plan.bytes += static_cast<uint64_t>(rows) * 128;
              }
            }
          }
          plan.chunks.push_back({chunk_start, static_cast<uint32_t>(plan.bytes - chunk_start)});
        }
      }
    }
    plan.chunk_begin.push_back(static_cast<int32_t>(plan.chunks.size()));
  }
  return plan;
}

std::vector<WorkerRecord> worker_records(const Megakernel& k, const StreamPlan& plan, int32_t w) {
  std::vector<WorkerRecord> out;
  for (int32_t q = k.queue_offsets.at(w); q < k.queue_offsets.at(w + 1); ++q) {
    const int32_t d = k.queue_items[q];
    if (k.stream.at(d).pool >= 0) {
      out.push_back({-1, k.stream[d].pool});
      continue;
    }
    for (int32_t c = plan.chunk_begin[d]; c < plan.chunk_begin[d + 1]; ++c) out.push_back({c, -1});
  }
  return out;
}

}  // namespace mpk
