// CPU, kv_append family: k and v of kv heads h0:h1 into the caches at pos, k roped
// first when fuse-rope gave the operator the rope's attrs (numerics.h kv_append_block).
// A fused attention's kv_append tasks are planned here too.
#include "ir/rope.h"
#include "runtime/cpu/ops/cpu_ops.h"

namespace mpk::cpu {

void run_kv_append_op(const Program&, const Operator& op, TensorStore& st, const StepContext& ctx) {
  HeadSetup setup;
  if (op.attrs.count("theta")) setup.rope_inv = rope_inverse_frequencies(op.attrs);
  TensorBuffer& kc = st.at(op.outputs[0]);
  kv_append_block(st.at(op.inputs[0]), st.at(op.inputs[1]), kc, st.at(op.outputs[1]), 0, kc.shape[0], 0,
                  kc.shape[2], ctx.rows(), setup.prep(st));
}

TaskRun plan_kv_append_task(const TaskResolver& r) {
  r.kind_of_op({OpKind::kKvAppend, OpKind::kAttention});
  const Operator& op = r.op();
  TensorId k, v, kc, vc;
  HeadSetup setup;
  if (op.kind == OpKind::kAttention) {  // a fused attention appends (several splits)
    const AttentionForm f = attention_form(op);
    r.require(f.fused(), "a kv_append task belongs to a fused attention only");
    k = f.k, v = f.v, kc = f.k_cache, vc = f.v_cache;
    setup.rope_inv = rope_inverse_frequencies(op.attrs);
    setup.norm = f.k_norm;
    if (f.q_norm >= 0) setup.eps = attr_float(op.attrs, "eps");
  } else {
    if (op.attrs.count("theta")) setup.rope_inv = rope_inverse_frequencies(op.attrs);  // ropes k (fuse-rope)
    k = op.inputs[0], v = op.inputs[1], kc = op.outputs[0], vc = op.outputs[1];
  }
  const std::pair<Range, Range> rows_heads = appended(r, k, v, kc, vc, setup.norm);
  const Range rows = rows_heads.first, heads = rows_heads.second;
  return [=](TensorStore& st, const StepContext& ctx) {
    kv_append_block(st.at(k), st.at(v), st.at(kc), st.at(vc), rows.lo, rows.hi, heads.lo, heads.hi, ctx.rows(),
                    setup.prep(st));
  };
}

}  // namespace mpk::cpu
