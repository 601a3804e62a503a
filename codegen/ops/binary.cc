// codegen, binary elementwise family: task_silu_mul / task_residual_add / task_all_reduce
// <COLS, B, STRIDE> over column tiles of every row (runtime/device/tasks_binary.cuh).
#include "codegen/ops/desc_builder.h"

namespace mpk::codegen {

void describe_binary(DescBuilder& b, TaskId t, TaskDescription& out) {
  using Slot = abi::slots::Binary;
  const TensorId a = b.input(t, 0), c = b.input(t, 1), y = b.output(t, 0);
  const Region& yr = b.find(t, b.task(t).writes, y, "output");
  const int64_t c0 = yr.dims[1].lo, c1 = yr.dims[1].hi;
  b.reloc(t, Slot::kA, a, c0);
  b.reloc(t, Slot::kB, c, c0);
  b.reloc(t, Slot::kY, y, c0);
  out.call = "task_" + std::string(name_of(b.task(t).kind)) + DescBuilder::targs({c1 - c0, b.rows, b.tensor(y).shape[1]});
}

}  // namespace mpk::codegen
