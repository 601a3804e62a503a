// fuse-swiglu: act = silu_mul(linear(x, Wg[, w]), linear(x, Wu[, w]))  ->
// act = linear(x, Wg, Wu[, w]){activation="swiglu"}: one operator computes both
// products of its columns and the activation (docs/ir.md), so the gate and up phases
// and the silu_mul stage become one, and neither product is stored.
#include "passes/fuse_common.h"

namespace mpk {
namespace {

// A linear that may be one half of a swiglu: its output is its product (the linear
// family says which forms are: LinearForm::product_only), one bf16 output (the fused
// operator rounds each product to bf16, as the unfused store).
bool plain_half(const Program& p, const Operator& op) {
  const LinearForm f = linear_form(op);
  return op.kind == OpKind::kLinear && f.product_only() && op.inputs.size() == f.num_inputs() &&
         op.outputs.size() == 1 && p.tensor(f.y).dtype == DType::kBF16;
}

// Both linears read the same x, norm it the same way or not at all, and split the same
// way over tensor-parallel ranks.
bool same_input(const Operator& g, const Operator& u) {
  const LinearForm fg = linear_form(g), fu = linear_form(u);
  if (fg.x != fu.x || fg.norm != fu.norm) return false;
  if (attr_str_or(g.attrs, "parallel", "") != attr_str_or(u.attrs, "parallel", "")) return false;
  return fg.norm < 0 || g.attrs.at("eps") == u.attrs.at("eps");
}

bool fuse_swiglu(Program& p, std::vector<bool>& dead_op, std::vector<bool>& dead_tensor) {
  bool changed = false;
  for (OpId s = 0; s < static_cast<OpId>(p.ops.size()); ++s) {
    const Operator& silu = p.ops[s];
    if (dead_op[s] || silu.kind != OpKind::kSiluMul || silu.inputs.size() != 2 || silu.outputs.size() != 1) continue;
    const TensorId g = silu.inputs[0], u = silu.inputs[1];
    if (g == u || p.writers[g].size() != 1 || p.writers[u].size() != 1) continue;
    const OpId gl = p.writers[g][0], ul = p.writers[u][0];
    if (!only_link(p, g, gl, s) || !only_link(p, u, ul, s) || gl == ul) continue;
    const Operator &gate = p.ops[gl], &up = p.ops[ul];
    if (!plain_half(p, gate) || !plain_half(p, up) || !same_input(gate, up)) continue;
    const LinearForm f = linear_form(gate);
    Operator fused{gate.name + "_swiglu", OpKind::kLinear, {f.x, f.weight, linear_form(up).weight}, {silu.outputs[0]},
                   gate.attrs, gate.layer};
    if (f.norm >= 0) fused.inputs.push_back(f.norm);
    fused.attrs["activation"] = std::string("swiglu");
    changed |= fuse_group(p, {gl, ul, s}, std::move(fused), {g, u}, dead_op, dead_tensor);
  }
  return changed;
}

PassInfo fuse_swiglu_pass_info() {
  return fuse_pass_info("fuse-swiglu",
                        "fold silu_mul(linear(x, Wg), linear(x, Wu)) into one linear with both weights and "
                        "activation=swiglu (each task computes both products of its columns and the "
                        "activation); before decompose",
                        fuse_swiglu);
}

}  // namespace

MPK_PASS(fuse_swiglu_pass_info);

}  // namespace mpk
