// Whole-operator execution: operator checks, one operator, and the reference run.
#include "runtime/cpu/reference.h"

#include <string>

#include "ir/error.h"

namespace mpk {
namespace {

class OpChecker {
 public:
  OpChecker(const Program& p, const Operator& op) : p_(p), op_(op) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw Error("op '" + op_.name + "' (" + std::string(name_of(op_.kind)) + "): " + what);
  }
  void arity(size_t in, size_t out) const {
    if (op_.inputs.size() != in || op_.outputs.size() != out)
      fail("expects " + std::to_string(in) + " inputs and " + std::to_string(out) + " outputs");
    for (TensorId t : op_.inputs) valid(t);
    for (TensorId t : op_.outputs) valid(t);
  }
  const Tensor& in(size_t i) const { return p_.tensors[op_.inputs[i]]; }
  const Tensor& out(size_t i) const { return p_.tensors[op_.outputs[i]]; }
  void shape(const Tensor& t, const std::vector<int64_t>& want) const {
    if (t.shape != want) fail("tensor '" + t.name + "' has shape " + str(t.shape) + ", expected " + str(want));
  }
  void rank(const Tensor& t, size_t r) const {
    if (t.shape.size() != r) fail("tensor '" + t.name + "' must have rank " + std::to_string(r));
    for (int64_t d : t.shape)
      if (d <= 0) fail("tensor '" + t.name + "' has an empty dimension");
  }
  void floating(const Tensor& t) const {
    if (t.dtype == DType::kI32) fail("tensor '" + t.name + "' must be floating point");
  }
  void i32(const Tensor& t) const {
    if (t.dtype != DType::kI32) fail("tensor '" + t.name + "' must be i32");
  }
  void require(bool ok, const std::string& what) const {
    if (!ok) fail(what);
  }

 private:
  void valid(TensorId t) const {
    if (t < 0 || t >= static_cast<TensorId>(p_.tensors.size()))
      fail("refers to tensor id " + std::to_string(t) + ", which does not exist");
  }
  static std::string str(const std::vector<int64_t>& s) {
    std::string o = "[";
    for (size_t i = 0; i < s.size(); ++i) o += (i ? ", " : "") + std::to_string(s[i]);
    return o + "]";
  }
  const Program& p_;
  const Operator& op_;
};

AttentionShape attention_shape(const Operator& op) {
  const int64_t nq = attr_int(op.attrs, "num_q_heads"), nkv = attr_int(op.attrs, "num_kv_heads");
  return {nq / nkv, attr_int(op.attrs, "head_dim"), static_cast<float>(attr_float(op.attrs, "scale"))};
}

}  // namespace

void check_op(const Program& p, OpId id) {
  if (id < 0 || id >= static_cast<OpId>(p.ops.size())) throw Error("no operator " + std::to_string(id));
  const Operator& op = p.ops[id];
  OpChecker c(p, op);
  switch (op.kind) {
    case OpKind::kEmbedding: {
      c.arity(2, 1);
      c.rank(c.in(0), 2);
      c.rank(c.in(1), 1);
      c.i32(c.in(1));
      c.floating(c.out(0));
      c.shape(c.out(0), {c.in(1).shape[0], c.in(0).shape[1]});
      return;
    }
    case OpKind::kRmsNorm:
    case OpKind::kQkNorm: {
      c.arity(2, 1);
      c.rank(c.in(0), 2);
      c.rank(c.in(1), 1);
      c.floating(c.out(0));
      c.shape(c.out(0), c.in(0).shape);
      attr_float(op.attrs, "eps");
      if (op.kind == OpKind::kRmsNorm) {
        c.shape(c.in(1), {c.in(0).shape[1]});
      } else {
        const int64_t hd = attr_int(op.attrs, "head_dim");
        c.shape(c.in(1), {hd});
        c.require(c.in(0).shape[1] % hd == 0, "width is not a multiple of head_dim");
      }
      return;
    }
    case OpKind::kLinear:
    case OpKind::kLmHead: {
      const LinearExtra extra = linear_extra(op);
      c.arity(extra == LinearExtra::kNone ? 2 : 3, 1);
      c.rank(c.in(0), 2);
      c.rank(c.in(1), 2);
      c.floating(c.out(0));
      c.require(c.in(1).shape[1] == c.in(0).shape[1], "weight width does not match the input width");
      c.shape(c.out(0), {c.in(0).shape[0], c.in(1).shape[0]});
      if (extra == LinearExtra::kResidual) c.shape(c.in(2), c.out(0).shape);
      if (extra == LinearExtra::kNorm) c.shape(c.in(2), {c.in(0).shape[1]});
      return;
    }
    case OpKind::kRope: {
      c.arity(1, 1);
      c.rank(c.in(0), 2);
      c.floating(c.out(0));
      c.shape(c.out(0), c.in(0).shape);
      const int64_t hd = attr_int(op.attrs, "head_dim");
      c.require(hd > 0 && hd % 2 == 0 && c.in(0).shape[1] % hd == 0,
                "head_dim must be even and divide the width");
      rope_inv_freq(op.attrs);
      return;
    }
    case OpKind::kKvAppend: {
      c.arity(2, 2);
      c.rank(c.out(0), 4);
      c.shape(c.out(1), c.out(0).shape);
      const auto& cs = c.out(0).shape;
      c.shape(c.in(0), {cs[0], cs[2] * cs[3]});
      c.shape(c.in(1), {cs[0], cs[2] * cs[3]});
      c.floating(c.out(0));
      c.floating(c.out(1));
      return;
    }
    case OpKind::kAttention: {
      c.arity(3, 1);
      const int64_t nq = attr_int(op.attrs, "num_q_heads"), nkv = attr_int(op.attrs, "num_kv_heads");
      const int64_t hd = attr_int(op.attrs, "head_dim");
      attr_float(op.attrs, "scale");
      c.require(nq > 0 && nkv > 0 && hd > 0 && nq % nkv == 0, "bad head counts");
      c.rank(c.in(1), 4);
      const auto& cs = c.in(1).shape;
      c.shape(c.in(1), {cs[0], cs[1], nkv, hd});
      c.shape(c.in(2), cs);
      c.shape(c.in(0), {cs[0], nq * hd});
      c.shape(c.out(0), {cs[0], nq * hd});
      c.floating(c.out(0));
      return;
    }
    case OpKind::kSiluMul:
    case OpKind::kResidualAdd: {
      c.arity(2, 1);
      c.rank(c.in(0), 2);
      c.shape(c.in(1), c.in(0).shape);
      c.shape(c.out(0), c.in(0).shape);
      c.floating(c.out(0));
      return;
    }
    case OpKind::kArgmax: {
      c.arity(1, 1);
      c.rank(c.in(0), 2);
      c.i32(c.out(0));
      c.shape(c.out(0), {c.in(0).shape[0]});
      return;
    }
  }
  c.fail("unknown operator kind");
}

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
      LinearExtras e;
      if (linear_extra(op) == LinearExtra::kResidual) e.residual = &in(2);
      if (linear_extra(op) == LinearExtra::kNorm) e.norm = &in(2), e.eps = attr_float(op.attrs, "eps");
      linear_block(in(0), in(1), y, 0, rows, 0, y.shape[1], e);
      return;
    }
    case OpKind::kQkNorm:
      qk_norm_block(in(0), in(1), y, 0, rows, 0, y.shape[1], attr_int(op.attrs, "head_dim"),
                    attr_float(op.attrs, "eps"));
      return;
    case OpKind::kRope:
      rope_block(in(0), y, 0, rows, 0, y.shape[1], attr_int(op.attrs, "head_dim"),
                 rope_inv_freq(op.attrs), ctx.step);
      return;
    case OpKind::kKvAppend: {
      const std::vector<float> inv = op.attrs.count("theta") ? rope_inv_freq(op.attrs) : std::vector<float>{};
      kv_append_block(in(0), in(1), y, st.at(op.outputs[1]), 0, rows, 0, y.shape[2], ctx.step,
                      inv.empty() ? nullptr : &inv);
      return;
    }
    case OpKind::kAttention: {
      const AttentionShape a = attention_shape(op);
      attention_block(in(0), in(1), in(2), y, 0, rows, 0, in(1).shape[2], a, ctx.step);
      return;
    }
    case OpKind::kSiluMul:
      silu_mul_block(in(0), in(1), y, 0, rows, 0, y.shape[1]);
      return;
    case OpKind::kResidualAdd:
      residual_add_block(in(0), in(1), y, 0, rows, 0, y.shape[1]);
      return;
    case OpKind::kArgmax: {
      const TensorBuffer& logits = in(0);
      for (int64_t b = 0; b < rows; ++b) {
        float v;
        int32_t i;
        argmax_row(logits, b, 0, logits.shape[1], &v, &i);
        y.store_i32(b, i);
        if (ctx.recorder) ctx.recorder->record(ctx.step, b, i, v);
      }
      return;
    }
  }
}

CpuRunResult run_reference(const Module& m, const Weights& w, int64_t steps,
                           const std::vector<int64_t>& prompt) {
  const Program& p = m.program;
  for (OpId id = 0; id < static_cast<OpId>(p.ops.size()); ++id) check_op(p, id);
  const RunTensors rt = find_run_tensors(p);
  check_run_inputs(rt, steps, prompt);
  TensorStore store(p, w);
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
