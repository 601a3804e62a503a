// CPU, binary elementwise family: silu_mul and residual_add over column tiles
// (numerics.h silu_mul_block, residual_add_block).
#include "runtime/cpu/ops/cpu_ops.h"

namespace mpk::cpu {
namespace {

void binary_block(OpKind kind, const TensorBuffer& a, const TensorBuffer& b, TensorBuffer& y, const RowsCols& rc) {
  if (kind == OpKind::kSiluMul)
    silu_mul_block(a, b, y, rc.b0, rc.b1, rc.c0, rc.c1);
  else
    residual_add_block(a, b, y, rc.b0, rc.b1, rc.c0, rc.c1);
}

}  // namespace

void run_binary_op(const Program&, const Operator& op, TensorStore& st, const StepContext&) {
  TensorBuffer& y = st.at(op.outputs[0]);
  binary_block(op.kind, st.at(op.inputs[0]), st.at(op.inputs[1]), y, {0, y.shape[0], 0, y.shape[1]});
}

TaskRun plan_binary_task(const TaskResolver& r) {
  const OpKind kind = r.task().kind == TaskKind::kSiluMul ? OpKind::kSiluMul : OpKind::kResidualAdd;
  r.kind_of_op({kind});
  const TensorId a = r.op().inputs[0], b = r.op().inputs[1], y = r.op().outputs[0];
  const RowsCols rc = rows_cols(r.write_on(y));
  r.need(box(a, {{rc.b0, rc.b1}, {rc.c0, rc.c1}}));
  r.need(box(b, {{rc.b0, rc.b1}, {rc.c0, rc.c1}}));
  return [=](TensorStore& st, const StepContext&) { binary_block(kind, st.at(a), st.at(b), st.at(y), rc); };
}

}  // namespace mpk::cpu
