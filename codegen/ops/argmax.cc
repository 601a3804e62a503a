// codegen, argmax family: task_argmax_partial<COLS, B, VSTRIDE, NP> over a vocabulary
// tile and task_argmax_reduce<NP, B> (of an argmax, or of an lm_head fused with its
// argmax; over every rank's partials where the vocabulary is split) (runtime/device/
// tasks_argmax.cuh).
#include "codegen/ops/desc_builder.h"
#include "ir/ops/tensor_parallel.h"

namespace mpk::codegen {

void describe_argmax(DescBuilder& b, TaskId t, TaskDescription& out) {
  const Task& task = b.task(t);
  b.scratch(b.warps * 8);
  if (task.kind == TaskKind::kArgmaxReduce) {
    using Slot = abi::slots::ArgmaxReduce;
    const Operator& op = b.op_of(t);
    const Region& vr = b.first_of_dtype(t, task.reads, DType::kF32, "argmax_val");
    const Region& ir = b.first_of_dtype(t, task.reads, DType::kI32, "argmax_idx");
    b.reloc(t, Slot::kVal, vr.tensor, 0);
    b.reloc(t, Slot::kIdx, ir.tensor, 0);
    b.reloc(t, Slot::kTokens, op.kind == OpKind::kLmHead ? linear_form(op).tokens : b.output(t, 0), 0);
    const TensorId logits = op.kind == OpKind::kArgmax ? op.inputs[0] : op.outputs[0];
    const int64_t shard = vocab_parallel(op) ? b.tensor(logits).shape[1] : 0;  // every rank's partials
    const int64_t np = b.tensor(vr.tensor).shape[1];
    out.call = "task_argmax_reduce" +
               (shard > 0 ? DescBuilder::targs({np, b.batch, shard}) : DescBuilder::targs({np, b.batch}));
    return;
  }
  using Slot = abi::slots::ArgmaxPartial;
  const TensorId logits = b.input(t, 0);
  const Region& lr = b.find(t, task.reads, logits, "logits");
  const Region& vr = b.first_of_dtype(t, task.writes, DType::kF32, "argmax_val");
  const Region& ir = b.first_of_dtype(t, task.writes, DType::kI32, "argmax_idx");
  const int64_t v0 = lr.dims[1].lo, v1 = lr.dims[1].hi, p = vr.dims[1].lo;
  b.reloc(t, Slot::kLogits, logits, v0);
  b.reloc(t, Slot::kVal, vr.tensor, p);
  b.reloc(t, Slot::kIdx, ir.tensor, p);
  DescBuilder::set_arg(out.d, Slot::kFirstRow, v0);
  out.call = "task_argmax_partial" +
             DescBuilder::targs({v1 - v0, b.batch, b.tensor(logits).shape[1], b.tensor(vr.tensor).shape[1]});
}

}  // namespace mpk::codegen
