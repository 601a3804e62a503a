// Walks each streaming descriptor's chunks in the order the device's StreamCursor
// consumes them (runtime/device/stream.cuh) and lays their boxes out back to back.
#include "codegen/stream_pack.h"

#include <algorithm>

namespace mpk {

StreamPlan plan_stream(const Megakernel& k, const Program& program) {
  StreamPlan plan;
  plan.offset.assign(k.tasks.size(), kNoStream);
  for (size_t i = 0; i < k.tasks.size(); ++i) {
    const abi::TaskDesc& d = k.tasks[i];
    if (d.s_groups <= 0 || k.stream_weight.at(i) < 0) continue;
    plan.offset[i] = plan.bytes;
    const bool group = d.arg[4] > 1;
    const int members = group ? d.arg[4] : 1;
    for (int32_t g = 0; g < d.s_groups; ++g) {
      for (int32_t c = 0; c < d.s_col_chunks; ++c) {
        const int32_t boxes = c == d.s_col_chunks - 1 ? d.s_boxes_last : d.s_boxes;
        for (int m = 0; m < members; ++m) {
          const size_t di = m == 0 ? i : static_cast<size_t>(d.arg[m]);
          const abi::TaskDesc& md = k.tasks.at(di);
          const Tensor& w = program.tensor(k.stream_weight.at(di));
          const int32_t rows = group ? md.s_box_rows : g == d.s_groups - 1 ? d.s_last_rows : d.s_box_rows;
          const int64_t row = md.s_row0 + (group ? 0 : static_cast<int64_t>(g) * d.s_box_rows);
          const int32_t valid = static_cast<int32_t>(std::clamp<int64_t>(w.shape[0] - row, 0, rows));
          for (int32_t b = 0; b < boxes; ++b) {
            plan.boxes.push_back({k.stream_weight.at(di), row, (static_cast<int64_t>(c) * d.s_boxes + b) * abi::kBoxCols, rows,
                                  valid, plan.bytes});
            plan.bytes += static_cast<uint64_t>(rows) * 128;
          }
        }
      }
    }
  }
  return plan;
}

}  // namespace mpk
