// Whole-operator execution: operator checks, one operator, and the reference run.
#include "runtime/cpu/reference.h"

#include <string>

#include "ir/error.h"
#include "ir/rope.h"
#include "ir/verifier.h"

namespace mpk {
namespace {

AttentionShape attention_shape(const Operator& op) {
  const int64_t nq = attr_int(op.attrs, "num_q_heads"), nkv = attr_int(op.attrs, "num_kv_heads");
  return {nq / nkv, attr_int(op.attrs, "head_dim"), static_cast<float>(attr_float(op.attrs, "scale"))};
}

}  // namespace

void check_op(const Program& p, OpId id) {
  if (id < 0 || id >= static_cast<OpId>(p.ops.size())) throw Error("no operator " + std::to_string(id));
  const Operator& op = p.ops[id];
  auto fail = [&](const std::string& what) {
    throw Error("op '" + op.name + "' (" + std::string(name_of(op.kind)) + "): " + what);
  };
  if (static_cast<int>(op.kind) >= kNumOpKinds) fail("unknown operator kind");
  for (const auto* list : {&op.inputs, &op.outputs})
    for (TensorId t : *list) {
      if (t < 0 || t >= static_cast<TensorId>(p.tensors.size()))
        fail("refers to tensor id " + std::to_string(t) + ", which does not exist");
      for (int64_t d : p.tensors[t].shape)
        if (d <= 0) fail("tensor '" + p.tensors[t].name + "' has an empty dimension");
    }
  const std::string problem = op_signature_problem(p, op);
  if (!problem.empty()) fail(problem);
}

namespace {

// tokens[b] = the argmax of logits row b, recorded for the step.
void argmax_rows(const TensorBuffer& logits, TensorBuffer& tokens, const StepContext& ctx) {
  for (int64_t b = 0; b < logits.shape[0]; ++b) {
    float v;
    int32_t i;
    const bool finite = argmax_row(logits, b, 0, logits.shape[1], &v, &i);
    tokens.store_i32(b, i);
    if (!ctx.recorder) continue;
    ctx.recorder->record(ctx.step, b, i, v);
    if (!finite) ctx.recorder->mark_non_finite(ctx.step, b);
  }
}

}  // namespace

void run_op(const Program& p, OpId id, TensorStore& st, const StepContext& ctx) {
  const Operator& op = p.ops[id];
  auto in = [&](size_t i) -> TensorBuffer& { return st.at(op.inputs[i]); };
  TensorBuffer& y = st.at(op.outputs[0]);
  const int64_t rows = y.shape[0];
  switch (op.kind) {
    case OpKind::kEmbedding:
      embedding_block(in(0), in(1), y, 0, rows, 0, y.shape[1], ctx);
      return;
    case OpKind::kRmsNorm:
      rms_norm_block(in(0), in(1), y, 0, rows, attr_float(op.attrs, "eps"));
      return;
    case OpKind::kLinear:
    case OpKind::kLmHead: {
      const LinearForm f = linear_form(op);
      LinearExtras e;
      if (f.residual >= 0) e.residual = &st.at(f.residual);
      if (f.norm >= 0) e.norm = &st.at(f.norm), e.eps = attr_float(op.attrs, "eps");
      if (f.up >= 0) e.up = &st.at(f.up);
      linear_block(in(0), in(1), y, 0, rows, 0, y.shape[1], e);
      if (f.tokens >= 0) argmax_rows(y, st.at(f.tokens), ctx);  // fuse-argmax
      return;
    }
    case OpKind::kQkNorm:
      qk_norm_block(in(0), in(1), y, 0, rows, 0, y.shape[1], attr_int(op.attrs, "head_dim"),
                    attr_float(op.attrs, "eps"));
      return;
    case OpKind::kRope:
      rope_block(in(0), y, 0, rows, 0, y.shape[1], attr_int(op.attrs, "head_dim"),
                 rope_inverse_frequencies(op.attrs), ctx.step);
      return;
    case OpKind::kKvAppend: {
      const std::vector<float> inv =
          op.attrs.count("theta") ? rope_inverse_frequencies(op.attrs) : std::vector<float>{};
      HeadPrep prep;
      if (!inv.empty()) prep.rope_inv = &inv;
      kv_append_block(in(0), in(1), y, st.at(op.outputs[1]), 0, rows, 0, y.shape[2], ctx.step, prep);
      return;
    }
    case OpKind::kAttention: {
      const AttentionForm f = attention_form(op);
      const AttentionShape a = attention_shape(op);
      TensorBuffer& kc = st.at(f.k_cache);
      TensorBuffer& vc = st.at(f.v_cache);
      if (!f.fused()) {
        attention_block(st.at(f.q), kc, vc, y, 0, rows, 0, a.group * kc.shape[2], a, ctx.step);
        return;
      }
      // fuse-attention: k (normed, roped) and v appended, then attention with q normed and roped.
      const std::vector<float> inv = rope_inverse_frequencies(op.attrs);
      const double eps = f.q_norm >= 0 ? attr_float(op.attrs, "eps") : 0;
      HeadPrep q_prep{&inv, nullptr, eps}, k_prep{&inv, nullptr, eps};
      if (f.q_norm >= 0) q_prep.norm = &st.at(f.q_norm), k_prep.norm = &st.at(f.k_norm);
      kv_append_block(st.at(f.k), st.at(f.v), kc, vc, 0, rows, 0, kc.shape[2], ctx.step, k_prep);
      attention_block(st.at(f.q), kc, vc, y, 0, rows, 0, a.group * kc.shape[2], a, ctx.step, &q_prep);
      return;
    }
    case OpKind::kSiluMul:
      silu_mul_block(in(0), in(1), y, 0, rows, 0, y.shape[1]);
      return;
    case OpKind::kResidualAdd:
      residual_add_block(in(0), in(1), y, 0, rows, 0, y.shape[1]);
      return;
    case OpKind::kArgmax:
      argmax_rows(in(0), y, ctx);
      return;
  }
}

CpuRunResult run_reference(const Module& m, const Weights& w, int64_t steps,
                           const std::vector<int64_t>& prompt) {
  const Program& p = m.program;
  for (OpId id = 0; id < static_cast<OpId>(p.ops.size()); ++id) check_op(p, id);
  const RunTensors rt = find_run_tensors(p);
  check_run_inputs(rt, steps, prompt);
  TensorStore store(p, w);
  for (const Operator& op : p.ops)
    for (TensorId out : op.outputs) store.require_writable(out, "operator '" + op.name + "'");
  StepRecorder rec(steps, rt.batch);
  const auto start = std::chrono::steady_clock::now();
  for (int64_t s = 0; s < steps; ++s) {
    const StepContext ctx{s, &prompt, &rec};
    for (OpId id = 0; id < static_cast<OpId>(p.ops.size()); ++id) run_op(p, id, store, ctx);
  }
  CpuRunResult r = collect_result(rec, store, rt, start);
  r.tasks_run = steps * static_cast<int64_t>(p.ops.size());
  return r;
}

}  // namespace mpk
