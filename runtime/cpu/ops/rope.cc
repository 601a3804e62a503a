// CPU, rope family: rotate-half RoPE at pos over whole heads (numerics.h rope_block;
// the frequencies are ir/rope.h's, as codegen's tables).
#include "ir/rope.h"
#include "runtime/cpu/ops/cpu_ops.h"

namespace mpk::cpu {

void run_rope_op(const Program&, const Operator& op, TensorStore& st, const StepContext& ctx) {
  TensorBuffer& y = st.at(op.outputs[0]);
  rope_block(st.at(op.inputs[0]), y, 0, y.shape[0], 0, y.shape[1], attr_int(op.attrs, "head_dim"),
             rope_inverse_frequencies(op.attrs), ctx.rows());
}

TaskRun plan_rope_task(const TaskResolver& r) {
  r.kind_of_op({OpKind::kRope});
  const TensorId x = r.op().inputs[0], y = r.op().outputs[0];
  const int64_t hd = attr_int(r.op().attrs, "head_dim");
  const std::vector<float> inv = rope_inverse_frequencies(r.op().attrs);
  const RowsCols rc = rows_cols(r.write_on(y));
  r.require(rc.c0 % hd == 0 && rc.c1 % hd == 0, "must write whole heads");
  r.need(box(x, {{rc.b0, rc.b1}, {rc.c0, rc.c1}}));
  return [=](TensorStore& st, const StepContext& ctx) {
    rope_block(st.at(x), st.at(y), rc.b0, rc.b1, rc.c0, rc.c1, hd, inv, ctx.rows());
  };
}

}  // namespace mpk::cpu
