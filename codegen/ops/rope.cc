// codegen, rope family: task_rope<HD, NH, B, STRIDE, S> over whole heads of every row,
// with the RoPE's (cos, sin) table (runtime/device/tasks_rope.cuh).
#include "codegen/ops/desc_builder.h"

namespace mpk::codegen {

void describe_rope(DescBuilder& b, TaskId t, TaskDescription& out) {
  using Slot = abi::slots::Rope;
  const Operator& op = b.op_of(t);
  const TensorId x = b.input(t, 0), y = b.output(t, 0);
  const Region& yr = b.find(t, b.task(t).writes, y, "output");
  const int64_t hd = attr_int(op.attrs, "head_dim");
  const int64_t a = yr.dims[1].lo, e = yr.dims[1].hi;
  if (a % hd != 0 || (e - a) % hd != 0) b.fail(t, "region is not whole heads");
  if (hd % 2 != 0) b.fail(t, "rope head_dim must be even");
  b.reloc(t, Slot::kX, x, a);
  b.reloc(t, Slot::kY, y, a);
  b.reloc_rope(t, Slot::kTable, op.attrs);
  out.call = "task_rope" + DescBuilder::targs({hd, (e - a) / hd, b.rows, b.tensor(y).shape[1], b.out.max_seq_len});
}

}  // namespace mpk::codegen
