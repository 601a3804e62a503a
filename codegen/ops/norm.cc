// codegen, norm family: task_rms_norm<H, B> over whole rows, task_qk_norm<HD, NH, B,
// STRIDE> over whole heads, of every row (runtime/device/tasks_norm.cuh).
#include "codegen/ops/desc_builder.h"

namespace mpk::codegen {

void describe_norm(DescBuilder& b, TaskId t, TaskDescription& out) {
  using Slot = abi::slots::Norm;
  const Operator& op = b.op_of(t);
  const TensorId x = b.input(t, 0), w = b.input(t, 1), y = b.output(t, 0);
  const Region& yr = b.find(t, b.task(t).writes, y, "output");
  const int64_t eps = float_bits(static_cast<float>(attr_float(op.attrs, "eps")));
  if (b.task(t).kind == TaskKind::kRmsNorm) {
    b.need_full_rows(t, yr);
    b.reloc(t, Slot::kX, x, 0);
    b.reloc(t, Slot::kW, w, 0);
    b.reloc(t, Slot::kY, y, 0);
    DescBuilder::set_arg(out.d, Slot::kEps, eps);
    const int64_t H = b.tensor(y).shape[1];
    out.call = "task_rms_norm" + DescBuilder::targs({H, b.rows});
    if (H % 8 != 0) b.fail(t, "hidden size is not a multiple of 8");
    b.scratch(static_cast<int>((H * 2 + 15) / 16 * 16 + 16));
    return;
  }
  const int64_t hd = attr_int(op.attrs, "head_dim");
  const int64_t a = yr.dims[1].lo, e = yr.dims[1].hi;
  if (a % hd != 0 || (e - a) % hd != 0) b.fail(t, "region is not whole heads");
  b.reloc(t, Slot::kX, x, a);
  b.reloc(t, Slot::kW, w, 0);
  b.reloc(t, Slot::kY, y, a);
  DescBuilder::set_arg(out.d, Slot::kEps, eps);
  out.call = "task_qk_norm" + DescBuilder::targs({hd, (e - a) / hd, b.rows, b.tensor(y).shape[1]});
}

}  // namespace mpk::codegen
