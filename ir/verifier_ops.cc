// "structure.op-signature": each operator kind's inputs, outputs, shapes, dtypes and
// required attrs, exactly as the operator table of docs/ir.md gives them.
#include <cmath>

#include "ir/checked.h"

#include "ir/verifier.h"

namespace mpk {
namespace {

// Checks one operator; each failed check throws Error with the problem.
class Signature {
 public:
  Signature(const Program& p, const Operator& op) : p_(p), op_(op) {}

  void check() {
    by_kind();
    in_place();  // after the arity checks: a few operands each
  }

 private:
  void by_kind() {
    switch (op_.kind) {
      case OpKind::kEmbedding: return embedding();
      case OpKind::kRmsNorm: return rms_norm();
      case OpKind::kLinear: return linear(false);
      case OpKind::kLmHead: return linear(true);
      case OpKind::kQkNorm: return qk_norm();
      case OpKind::kRope: return rope();
      case OpKind::kKvAppend: return kv_append();
      case OpKind::kAttention: return attention();
      case OpKind::kSiluMul:
      case OpKind::kResidualAdd: return elementwise();
      case OpKind::kArgmax: return argmax();
    }
  }

  [[noreturn]] static void bad(const std::string& what) { throw Error(what); }

  // docs/ir.md: a fused attention (its caches) is the one operator that reads and writes
  // the same tensor: any other would read what its own tasks overwrite.
  void in_place() {
    if (attention_form(op_).fused()) return;
    for (TensorId o : op_.outputs)
      for (TensorId i : op_.inputs)
        if (o == i) bad("'" + p_.tensors[o].name + "' is both an input and an output");
  }

  void arity(size_t nin, size_t nout) {
    if (op_.inputs.size() != nin || op_.outputs.size() != nout)
      bad("expects " + std::to_string(nin) + " inputs and " + std::to_string(nout) +
          " outputs, has " + std::to_string(op_.inputs.size()) + " and " +
          std::to_string(op_.outputs.size()));
  }

  const Tensor& in(size_t i) const { return p_.tensors[op_.inputs[i]]; }
  const Tensor& out(size_t i) const { return p_.tensors[op_.outputs[i]]; }

  // `role` is the name docs/ir.md gives the operand ("x", "W", ...).
  const std::vector<int64_t>& rank(const Tensor& t, const std::string& role, size_t r) {
    if (t.shape.size() != r)
      bad(role + " '" + t.name + "' must have rank " + std::to_string(r) + ", has shape " +
          format_shape(t.shape));
    return t.shape;
  }

  void floating(const Tensor& t, const std::string& role) {
    if (t.dtype == DType::kI32) bad(role + " '" + t.name + "' must be a floating-point tensor, is i32");
  }

  void dtype(const Tensor& t, const std::string& role, DType d) {
    if (t.dtype != d)
      bad(role + " '" + t.name + "' must be " + std::string(name_of(d)) + ", is " +
          std::string(name_of(t.dtype)));
  }

  void same_shape(const Tensor& a, const std::string& ra, const Tensor& b, const std::string& rb) {
    if (a.shape != b.shape)
      bad(ra + " '" + a.name + "' " + format_shape(a.shape) + " and " + rb + " '" + b.name + "' " +
          format_shape(b.shape) + " must have the same shape");
  }

  void dim(int64_t got, int64_t want, const std::string& what) {
    if (got != want)
      bad(what + " is " + std::to_string(got) + ", expected " + std::to_string(want));
  }

  int64_t positive_int(const std::string& key) {
    const int64_t v = attr_int(op_.attrs, key);
    if (v <= 0) bad("attribute '" + key + "' = " + std::to_string(v) + " must be positive");
    return v;
  }

  void positive_float(const std::string& key) {
    const double v = attr_float(op_.attrs, key);
    if (!(v > 0) || !std::isfinite(v))
      bad("attribute '" + key + "' = " + format_attr_value(v) + " must be positive and finite");
  }

  void embedding() {
    arity(2, 1);
    const auto& table = rank(in(0), "table", 2);
    const auto& tok = rank(in(1), "tokens", 1);
    const auto& y = rank(out(0), "y", 2);
    floating(in(0), "table");
    dtype(in(1), "tokens", DType::kI32);
    floating(out(0), "y");
    dim(y[0], tok[0], "y dimension 0 (batch)");
    dim(y[1], table[1], "y dimension 1 (hidden)");
  }

  void rms_norm() {
    arity(2, 1);
    const auto& x = rank(in(0), "x", 2);
    const auto& w = rank(in(1), "w", 1);
    floating(in(0), "x");
    floating(in(1), "w");
    floating(out(0), "y");
    dim(w[0], x[1], "w length");
    same_shape(out(0), "y", in(0), "x");
    positive_float("eps");
  }

  // linear: x [B,K], W [N,K] -> y [B,N]; lm_head: the same with y f32. The forms of
  // ir/module.h LinearForm: a residual or a norm weight, swiglu, lm_head with tokens.
  void linear(bool lm_head) {
    const LinearForm f = linear_form(op_);
    if (op_.attrs.count("activation")) {
      if (lm_head) bad("an lm_head takes no attribute 'activation'");
      if (attr_str(op_.attrs, "activation") != "swiglu")
        bad("attribute 'activation' = \"" + attr_str(op_.attrs, "activation") + "\" is not \"swiglu\"");
      if (op_.inputs.size() < 3) bad("a swiglu linear expects inputs (x, Wg, Wu) or (x, Wg, Wu, norm_w)");
    }
    if (f.residual >= 0 && (lm_head || f.swiglu()))
      bad(std::string(lm_head ? "an lm_head" : "a swiglu linear") +
          " takes no residual (a norm weight needs attribute 'eps')");
    arity(f.num_inputs(), lm_head && op_.outputs.size() == 2 ? 2 : 1);
    const auto& x = rank(in(0), "x", 2);
    const std::string wname = f.swiglu() ? "Wg" : "W";
    const auto& w = rank(in(1), wname, 2);
    const auto& y = rank(out(0), lm_head ? "logits" : "y", 2);
    floating(in(0), "x");
    floating(in(1), wname);
    if (lm_head)
      dtype(out(0), "logits", DType::kF32);
    else
      floating(out(0), "y");
    dim(w[1], x[1], wname + " dimension 1 (K)");
    dim(y[0], x[0], "output dimension 0 (batch)");
    dim(y[1], w[0], "output dimension 1 (N)");
    if (f.swiglu()) {
      rank(p_.tensors[f.up], "Wu", 2);
      floating(p_.tensors[f.up], "Wu");
      same_shape(p_.tensors[f.up], "Wu", in(1), "Wg");
    }
    if (f.residual >= 0) {
      floating(p_.tensors[f.residual], "residual");
      same_shape(p_.tensors[f.residual], "residual", out(0), "y");
    } else if (f.norm >= 0) {
      const Tensor& nt = p_.tensors[f.norm];
      const auto& nw = rank(nt, "norm_w", 1);
      floating(nt, "norm_w");
      dim(nw[0], x[1], "norm_w dimension 0 (K)");
      positive_float("eps");
    }
    if (f.tokens >= 0) {
      const auto& t = rank(out(1), "tokens", 1);
      dtype(out(1), "tokens", DType::kI32);
      dim(t[0], x[0], "tokens length (batch)");
    }
  }

  void qk_norm() {
    arity(2, 1);
    const auto& x = rank(in(0), "x", 2);
    const auto& w = rank(in(1), "w", 1);
    floating(in(0), "x");
    floating(in(1), "w");
    floating(out(0), "y");
    same_shape(out(0), "y", in(0), "x");
    positive_float("eps");
    const int64_t hd = positive_int("head_dim");
    dim(w[0], hd, "w length (head_dim)");
    if (x[1] % hd != 0)
      bad("x width " + std::to_string(x[1]) + " is not a multiple of head_dim " + std::to_string(hd));
  }

  void rope() {
    arity(1, 1);
    const auto& x = rank(in(0), "x", 2);
    floating(in(0), "x");
    floating(out(0), "y");
    same_shape(out(0), "y", in(0), "x");
    const int64_t hd = rope_attrs();
    if (x[1] % hd != 0)
      bad("x width " + std::to_string(x[1]) + " is not a multiple of head_dim " + std::to_string(hd));
  }

  // The attrs of a RoPE (a rope operator, or a kv_append that ropes k); returns head_dim.
  int64_t rope_attrs() {
    const int64_t hd = positive_int("head_dim");
    if (hd % 2 != 0) bad("head_dim " + std::to_string(hd) + " must be even");
    positive_float("theta");
    const std::string& type = attr_str(op_.attrs, "rope_type");
    if (type == "llama3") {
      positive_float("factor");
      positive_float("low_freq_factor");
      positive_float("high_freq_factor");
      positive_int("original_max_position_embeddings");
      if (attr_float(op_.attrs, "high_freq_factor") <= attr_float(op_.attrs, "low_freq_factor"))
        bad("high_freq_factor must be greater than low_freq_factor");
    } else if (type != "default") {
      bad("rope_type '" + type + "' is neither \"default\" nor \"llama3\"");
    }
    return hd;
  }

  // The caches [B, S, nkv, hd] of kv_append and attention.
  void caches(const Tensor& kc, const Tensor& vc, int64_t b) {
    const auto& k = rank(kc, "k_cache", 4);
    rank(vc, "v_cache", 4);
    floating(kc, "k_cache");
    floating(vc, "v_cache");
    same_shape(kc, "k_cache", vc, "v_cache");
    dim(k[0], b, "cache dimension 0 (batch)");
  }

  void kv_append() {
    arity(2, 2);
    const auto& k = rank(in(0), "k", 2);
    rank(in(1), "v", 2);
    floating(in(0), "k");
    floating(in(1), "v");
    same_shape(in(0), "k", in(1), "v");
    caches(out(0), out(1), k[0]);
    const auto& c = out(0).shape;
    dim(checked_mul(c[2], c[3], "cache heads x head_dim"), k[1], "cache heads x head_dim");
    if (op_.attrs.count("theta")) dim(rope_attrs(), c[3], "head_dim");  // ropes k (fuse-rope)
  }

  // Plain, or fused by fuse-attention (ir/module.h AttentionForm): then it also reads
  // k and v (and the norm weights), and writes the caches it reads.
  void attention() {
    const AttentionForm f = attention_form(op_);
    if (op_.inputs.size() >= 5)
      arity(op_.inputs.size() >= 7 ? 7 : 5, 3);
    else
      arity(3, 1);
    const Tensor& qt = p_.tensors[f.q];
    const auto& q = rank(qt, "q", 2);
    floating(qt, "q");
    caches(p_.tensors[f.k_cache], p_.tensors[f.v_cache], q[0]);
    floating(out(0), "y");
    same_shape(out(0), "y", qt, "q");
    const int64_t nq = positive_int("num_q_heads");
    const int64_t nkv = positive_int("num_kv_heads");
    const int64_t hd = positive_int("head_dim");
    positive_float("scale");
    if (nq % nkv != 0)
      bad("num_q_heads " + std::to_string(nq) + " is not a multiple of num_kv_heads " +
          std::to_string(nkv));
    dim(q[1], checked_mul(nq, hd, "num_q_heads x head_dim"), "q width (num_q_heads x head_dim)");
    const auto& c = p_.tensors[f.k_cache].shape;
    dim(c[2], nkv, "cache dimension 2 (num_kv_heads)");
    dim(c[3], hd, "cache dimension 3 (head_dim)");
    if (f.fused()) fused_attention(f, q[0], c[2] * c[3], hd);
  }

  void fused_attention(const AttentionForm& f, int64_t b, int64_t kv_width, int64_t hd) {
    if (op_.outputs[1] != f.k_cache || op_.outputs[2] != f.v_cache)
      bad("outputs 1 and 2 must be the caches it reads (inputs 3 and 4)");
    for (TensorId t : {f.q, f.k, f.v, f.q_norm, f.k_norm, op_.outputs[0]})
      if (t == f.k_cache || t == f.v_cache)
        bad("only the caches may be both read and written; '" + p_.tensors[t].name + "' is a cache");
    for (TensorId t : {f.q, f.k, f.v})
      if (t == op_.outputs[0]) bad("y '" + p_.tensors[t].name + "' is also an input");
    const Tensor& kt = p_.tensors[f.k];
    const auto& k = rank(kt, "k", 2);
    floating(kt, "k");
    floating(p_.tensors[f.v], "v");
    same_shape(p_.tensors[f.v], "v", kt, "k");
    dim(k[0], b, "k dimension 0 (batch)");
    dim(k[1], kv_width, "k width (num_kv_heads x head_dim)");
    dim(rope_attrs(), hd, "rope head_dim");
    if (f.q_norm < 0) return;
    positive_float("eps");
    for (auto [t, role] : {std::pair{f.q_norm, "q_norm_w"}, {f.k_norm, "k_norm_w"}}) {
      const auto& w = rank(p_.tensors[t], role, 1);
      floating(p_.tensors[t], role);
      dim(w[0], hd, std::string(role) + " length (head_dim)");
    }
  }

  void elementwise() {
    arity(2, 1);
    rank(in(0), "a", 2);
    floating(in(0), "a");
    floating(in(1), "b");
    floating(out(0), "y");
    same_shape(in(1), "b", in(0), "a");
    same_shape(out(0), "y", in(0), "a");
  }

  void argmax() {
    arity(1, 1);
    const auto& l = rank(in(0), "logits", 2);
    const auto& t = rank(out(0), "tokens", 1);
    floating(in(0), "logits");
    dtype(out(0), "tokens", DType::kI32);
    dim(t[0], l[0], "tokens length (batch)");
  }

  const Program& p_;
  const Operator& op_;
};

}  // namespace

std::string op_signature_problem(const Program& p, const Operator& op) {
  try {
    Signature(p, op).check();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace mpk
