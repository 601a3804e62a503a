// CPU, binary elementwise family: silu_mul, residual_add and all_reduce over column tiles
// (numerics.h silu_mul_block, residual_add_block, all_reduce_block). An all_reduce reads
// its partial in every rank's store (StepContext::rank_stores), in rank order.
#include "ir/ops/binary.h"
#include "runtime/cpu/ops/cpu_ops.h"

namespace mpk::cpu {
namespace {

void binary_block(OpKind kind, TensorId a, TensorId b, TensorId y, TensorStore& st, const StepContext& ctx,
                  const RowsCols& rc) {
  if (kind == OpKind::kSiluMul) {
    silu_mul_block(st.at(a), st.at(b), st.at(y), rc.b0, rc.b1, rc.c0, rc.c1);
  } else if (kind == OpKind::kAllReduce) {
    std::vector<const TensorBuffer*> partials;
    if (ctx.rank_stores)
      for (const TensorStore* rank : *ctx.rank_stores) partials.push_back(&rank->at(b));
    else
      partials.push_back(&st.at(b));
    all_reduce_block(st.at(a), partials, st.at(y), rc.b0, rc.b1, rc.c0, rc.c1);
  } else {
    residual_add_block(st.at(a), st.at(b), st.at(y), rc.b0, rc.b1, rc.c0, rc.c1);
  }
}

}  // namespace

void run_binary_op(const Program&, const Operator& op, TensorStore& st, const StepContext& ctx) {
  const TensorBuffer& y = st.at(op.outputs[0]);
  binary_block(op.kind, op.inputs[0], op.inputs[1], op.outputs[0], st, ctx, {0, y.shape[0], 0, y.shape[1]});
}

TaskRun plan_binary_task(const TaskResolver& r) {
  const OpKind kind = r.op().kind;
  r.require(binary_task_kind(kind) == r.task().kind,
            "task kind does not belong to a " + std::string(name_of(kind)) + " operator");
  const TensorId a = r.op().inputs[0], b = r.op().inputs[1], y = r.op().outputs[0];
  const RowsCols rc = rows_cols(r.write_on(y));
  r.need(box(a, {{rc.b0, rc.b1}, {rc.c0, rc.c1}}));
  r.need(box(b, {{rc.b0, rc.b1}, {rc.c0, rc.c1}}));
  return [=](TensorStore& st, const StepContext& ctx) { binary_block(kind, a, b, y, st, ctx, rc); };
}

}  // namespace mpk::cpu
