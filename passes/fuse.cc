// Operator fusions (docs/ir.md, docs/passes.md). Each removes one dependent stage, so
// the megakernel saves one event round trip, and the intermediate tensor is never
// stored. All run on operators only: before decompose.
//   fuse-residual: y = linear(x, W); h2 = residual_add(h, y)  ->  h2 = linear(x, W, h)
//   fuse-norm:     xn = rms_norm(x, w); y_i = linear(xn, W_i)  ->  y_i = linear(x, W_i, w){eps}
//                  (and lm_head(xn, W) -> lm_head(x, W, w){eps})
//   fuse-rope:     kr = rope(k); kv_append(kr, v)  ->  kv_append(k, v){rope attrs}
// A fusion applies only where the fused rounding is the unfused one exactly.
#include <algorithm>

#include "passes/fuse_common.h"
#include "passes/options.h"

namespace mpk {
namespace {

bool fuse_residual(Program& p, std::vector<bool>& dead_op, std::vector<bool>& dead_tensor) {
  bool changed = false;
  for (OpId a = 0; a < static_cast<OpId>(p.ops.size()); ++a) {
    const Operator& add = p.ops[a];
    if (add.kind != OpKind::kResidualAdd || add.inputs.size() != 2 || add.outputs.size() != 1) continue;
    for (int side = 1; side >= 0; --side) {  // the usual order is residual_add(h, y)
      const TensorId y = add.inputs[side], h = add.inputs[1 - side], out = add.outputs[0];
      if (p.writers[y].size() != 1 || p.readers[y].size() != 1 || p.writers[out].size() != 1 || y == h) continue;
      const OpId l = p.writers[y][0];
      Operator& lin = p.ops[l];
      const LinearForm f = linear_form(lin);
      if (lin.kind != OpKind::kLinear || f.residual >= 0 || f.norm >= 0 || f.swiglu()) continue;
      // The linear now reads h and writes out at its own place in program order.
      if (written_between(p, h, l, a) || read_between(p, out, l, a)) continue;
      if (p.tensor(y).dtype != p.tensor(out).dtype || p.tensor(y).shape != p.tensor(out).shape) continue;
      lin.inputs.push_back(h);
      lin.outputs[0] = out;
      dead_op[a] = true;
      dead_tensor[y] = true;
      changed = true;
      break;
    }
  }
  return changed;
}

// The normed x must be bf16 (the fused prologue rounds to bf16) and read only by
// linears (and, with `lm_head`, lm_heads) that have no residual or norm yet and read it
// as x only; each of them gets x and the norm weight.
bool fuse_norm(Program& p, std::vector<bool>& dead_op, std::vector<bool>& dead_tensor, bool lm_head) {
  bool changed = false;
  for (OpId n = 0; n < static_cast<OpId>(p.ops.size()); ++n) {
    const Operator& norm = p.ops[n];
    if (norm.kind != OpKind::kRmsNorm || norm.inputs.size() != 2 || norm.outputs.size() != 1) continue;
    const TensorId xn = norm.outputs[0];
    if (p.writers[xn].size() != 1 || p.readers[xn].empty() || p.tensor(xn).dtype != DType::kBF16) continue;
    const bool all_linear = std::all_of(p.readers[xn].begin(), p.readers[xn].end(), [&](OpId r) {
      const Operator& op = p.ops[r];
      const LinearForm f = linear_form(op);
      return (op.kind == OpKind::kLinear || lm_head) && f.x == xn && f.norm < 0 && f.residual < 0 &&
             op.inputs.size() == f.num_inputs() && std::count(op.inputs.begin(), op.inputs.end(), xn) == 1;
    });
    const OpId last = *std::max_element(p.readers[xn].begin(), p.readers[xn].end());
    // The linears now read x and w at their own places in program order.
    if (!all_linear || written_between(p, norm.inputs[0], n, last) || written_between(p, norm.inputs[1], n, last))
      continue;
    for (OpId r : p.readers[xn]) {
      Operator& lin = p.ops[r];
      lin.inputs[0] = norm.inputs[0];
      lin.inputs.push_back(norm.inputs[1]);
      lin.attrs["eps"] = norm.attrs.at("eps");
    }
    dead_op[n] = true;
    dead_tensor[xn] = true;
    changed = true;
  }
  return changed;
}

bool fuse_norm_into_linears(Program& p, std::vector<bool>& dead_op, std::vector<bool>& dead_tensor) {
  return fuse_norm(p, dead_op, dead_tensor, false);
}
bool fuse_norm_into_linears_and_lm_heads(Program& p, std::vector<bool>& dead_op, std::vector<bool>& dead_tensor) {
  return fuse_norm(p, dead_op, dead_tensor, true);
}

// A rope whose output only a kv_append reads, as its k: the kv_append ropes k itself.
bool fuse_rope(Program& p, std::vector<bool>& dead_op, std::vector<bool>& dead_tensor) {
  bool changed = false;
  for (OpId r = 0; r < static_cast<OpId>(p.ops.size()); ++r) {
    const Operator& rope = p.ops[r];
    if (rope.kind != OpKind::kRope || rope.inputs.size() != 1 || rope.outputs.size() != 1) continue;
    const TensorId kr = rope.outputs[0];
    if (p.writers[kr].size() != 1 || p.readers[kr].size() != 1) continue;
    const OpId a = p.readers[kr][0];
    Operator& kv = p.ops[a];
    if (kv.kind != OpKind::kKvAppend || kv.inputs.size() != 2 || kv.inputs[0] != kr || kv.inputs[1] == kr ||
        kv.attrs.count("theta") || p.tensor(kr).dtype != p.tensor(kv.outputs[0]).dtype ||
        written_between(p, rope.inputs[0], r, a))
      continue;
    kv.inputs[0] = rope.inputs[0];
    for (const auto& [key, value] : rope.attrs) kv.attrs[key] = value;
    dead_op[r] = true;
    dead_tensor[kr] = true;
    changed = true;
  }
  return changed;
}

PassInfo fuse_residual_pass_info() {
  return fuse_pass_info("fuse-residual",
                        "fold each residual_add into the linear producing its operand (the add runs in the "
                        "linear's epilogue); before decompose",
                        fuse_residual);
}

struct FuseNormOptions {
  bool lm_head = true;
};

PassInfo fuse_norm_pass_info() {
  const char* name = "fuse-norm";
  return typed_pass_info(
      name,
      "fold each rms_norm read only by linears and lm_heads (lm-head=false: linears only) into "
      "their prologue (each norms its x); before decompose",
      OptionSchema<FuseNormOptions>().flag(
          "lm-head", &FuseNormOptions::lm_head,
          "also fold a norm read by lm_heads (the final norm into the LM head)"),
      [name](const FuseNormOptions& o) {
        return fuse_pass(name, o.lm_head ? fuse_norm_into_linears_and_lm_heads
                                         : fuse_norm_into_linears);
      });
}

PassInfo fuse_rope_pass_info() {
  return fuse_pass_info("fuse-rope",
                        "fold a rope read only by a kv_append (as its k) into it (it ropes k while appending); "
                        "before decompose",
                        fuse_rope);
}

}  // namespace

MPK_PASS(fuse_residual_pass_info);
MPK_PASS(fuse_norm_pass_info);
MPK_PASS(fuse_rope_pass_info);

}  // namespace mpk
