// CPU, embedding family: y[b, c0:c1] = table[tok(b), c0:c1] (numerics.h embedding_block).
#include "runtime/cpu/ops/cpu_ops.h"

namespace mpk::cpu {

void run_embedding_op(const Program&, const Operator& op, TensorStore& st, const StepContext& ctx) {
  TensorBuffer& y = st.at(op.outputs[0]);
  embedding_block(st.at(op.inputs[0]), st.at(op.inputs[1]), y, 0, y.shape[0], 0, y.shape[1], ctx);
}

TaskRun plan_embedding_task(const TaskResolver& r) {
  r.kind_of_op({OpKind::kEmbedding});
  const TensorId table = r.op().inputs[0], tokens = r.op().inputs[1], y = r.op().outputs[0];
  const RowsCols w = rows_cols(r.write_on(y));
  r.need(box(table, {{0, r.tensor(table).shape[0]}, {w.c0, w.c1}}));
  r.need(box(tokens, {{w.b0, w.b1}}));
  return [=](TensorStore& st, const StepContext& ctx) {
    embedding_block(st.at(table), st.at(tokens), st.at(y), w.b0, w.b1, w.c0, w.c1, ctx);
  };
}

}  // namespace mpk::cpu
