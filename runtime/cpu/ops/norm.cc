// CPU, norm family: rms_norm over whole rows, qk_norm over whole heads
// (numerics.h rms_norm_block, qk_norm_block).
#include "runtime/cpu/ops/cpu_ops.h"

namespace mpk::cpu {

void run_norm_op(const Program&, const Operator& op, TensorStore& st, const StepContext&) {
  const TensorBuffer &x = st.at(op.inputs[0]), &w = st.at(op.inputs[1]);
  TensorBuffer& y = st.at(op.outputs[0]);
  const double eps = attr_float(op.attrs, "eps");
  if (op.kind == OpKind::kRmsNorm)
    rms_norm_block(x, w, y, 0, y.shape[0], eps);
  else
    qk_norm_block(x, w, y, 0, y.shape[0], 0, y.shape[1], attr_int(op.attrs, "head_dim"), eps);
}

TaskRun plan_norm_task(const TaskResolver& r) {
  const bool qk = r.task().kind == TaskKind::kQkNorm;
  r.kind_of_op({qk ? OpKind::kQkNorm : OpKind::kRmsNorm});
  const Operator& op = r.op();
  const TensorId x = op.inputs[0], w = op.inputs[1], y = op.outputs[0];
  const double eps = attr_float(op.attrs, "eps");
  const RowsCols rc = rows_cols(r.write_on(y));
  const int64_t hd = qk ? attr_int(op.attrs, "head_dim") : r.tensor(y).shape[1];
  r.require(rc.c0 % hd == 0 && rc.c1 % hd == 0, qk ? "must write whole heads" : "must write whole rows");
  r.need(box(x, {{rc.b0, rc.b1}, {rc.c0, rc.c1}}));
  r.need(box(w, {{0, hd}}));
  if (!qk)
    return [=](TensorStore& st, const StepContext&) { rms_norm_block(st.at(x), st.at(w), st.at(y), rc.b0, rc.b1, eps); };
  return [=](TensorStore& st, const StepContext&) {
    qk_norm_block(st.at(x), st.at(w), st.at(y), rc.b0, rc.b1, rc.c0, rc.c1, hd, eps);
  };
}

}  // namespace mpk::cpu
