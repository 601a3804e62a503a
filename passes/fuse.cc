// Operator fusions (docs/ir.md, docs/passes.md). Each removes one dependent stage, so
// the megakernel saves one event round trip, and the intermediate tensor is never
// stored. All run on operators only: before decompose.
//   fuse-residual: y = linear(x, W); h2 = residual_add(h, y)  ->  h2 = linear(x, W, h)
//   fuse-norm:     xn = rms_norm(x, w); y_i = linear(xn, W_i)  ->  y_i = linear(x, W_i, w){eps}
//   fuse-rope:     kr = rope(k); kv_append(kr, v)  ->  kv_append(k, v){rope attrs}
// A fusion applies only where the fused rounding is the unfused one exactly.
#include <algorithm>

#include "passes/pass.h"
#include "passes/registry.h"

namespace mpk {
namespace {

// Whether an operator strictly between lo and hi in program order writes (reads) t:
// fusing would then move an access of t across it.
bool written_between(const Program& p, TensorId t, OpId lo, OpId hi) {
  return std::any_of(p.writers[t].begin(), p.writers[t].end(), [&](OpId w) { return w > lo && w < hi; });
}
bool read_between(const Program& p, TensorId t, OpId lo, OpId hi) {
  return std::any_of(p.readers[t].begin(), p.readers[t].end(), [&](OpId r) { return r > lo && r < hi; });
}

// Removes the tensors flagged in `dead` and renumbers the operators' operands.
void drop_tensors(Program& p, const std::vector<bool>& dead) {
  std::vector<TensorId> remap(p.tensors.size(), -1);
  std::vector<Tensor> kept;
  for (size_t t = 0; t < p.tensors.size(); ++t) {
    if (dead[t]) continue;
    remap[t] = static_cast<TensorId>(kept.size());
    kept.push_back(std::move(p.tensors[t]));
  }
  p.tensors = std::move(kept);
  for (Operator& op : p.ops) {
    for (TensorId& t : op.inputs) t = remap[t];
    for (TensorId& t : op.outputs) t = remap[t];
  }
}

// Removes the flagged operators and tensors.
void compact(Program& p, const std::vector<bool>& dead_op, const std::vector<bool>& dead_tensor) {
  std::vector<Operator> kept;
  for (size_t o = 0; o < p.ops.size(); ++o)
    if (!dead_op[o]) kept.push_back(std::move(p.ops[o]));
  p.ops = std::move(kept);
  drop_tensors(p, dead_tensor);
  p.rebuild_use_lists();
}

// A fusion: marks the operators and tensors it folds away; returns whether it fused any.
using FuseFn = bool (*)(Program& p, std::vector<bool>& dead_op, std::vector<bool>& dead_tensor);

class FusePass : public Pass {
 public:
  FusePass(const char* name, FuseFn fuse) : name_(name), fuse_(fuse) {}
  PassResult run(Module& m) override {
    if (!m.graph.empty())
      return PassResult::failure(std::string(name_) + " runs on operators: put it before decompose");
    Program& p = m.program;
    p.rebuild_use_lists();
    std::vector<bool> dead_op(p.ops.size(), false), dead_tensor(p.tensors.size(), false);
    if (!fuse_(p, dead_op, dead_tensor)) return PassResult::ok(false);
    compact(p, dead_op, dead_tensor);
    return PassResult::ok(true);
  }

 private:
  const char* name_;
  FuseFn fuse_;
};

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
      if (linear_extra(lin) != LinearExtra::kNone || lin.kind != OpKind::kLinear) continue;
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

// The normed x must be bf16 (the fused prologue rounds to bf16) and read only by plain
// linears; each of them gets x and the norm weight.
bool fuse_norm(Program& p, std::vector<bool>& dead_op, std::vector<bool>& dead_tensor) {
  bool changed = false;
  for (OpId n = 0; n < static_cast<OpId>(p.ops.size()); ++n) {
    const Operator& norm = p.ops[n];
    if (norm.kind != OpKind::kRmsNorm || norm.inputs.size() != 2 || norm.outputs.size() != 1) continue;
    const TensorId xn = norm.outputs[0];
    if (p.writers[xn].size() != 1 || p.readers[xn].empty() || p.tensor(xn).dtype != DType::kBF16) continue;
    const bool all_linear = std::all_of(p.readers[xn].begin(), p.readers[xn].end(), [&](OpId r) {
      const Operator& op = p.ops[r];
      return op.kind == OpKind::kLinear && linear_extra(op) == LinearExtra::kNone && op.inputs[0] == xn &&
             op.inputs[1] != xn;
    });
    const OpId last = *std::max_element(p.readers[xn].begin(), p.readers[xn].end());
    // The linears now read x and w at their own places in program order.
    if (!all_linear || written_between(p, norm.inputs[0], n, last) || written_between(p, norm.inputs[1], n, last))
      continue;
    for (OpId r : p.readers[xn]) {
      Operator& lin = p.ops[r];
      lin.inputs = {norm.inputs[0], lin.inputs[1], norm.inputs[1]};
      lin.attrs["eps"] = norm.attrs.at("eps");
    }
    dead_op[n] = true;
    dead_tensor[xn] = true;
    changed = true;
  }
  return changed;
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

PassInfo fuse_pass_info(const char* name, const char* summary, FuseFn fn) {
  PassInfo info;
  info.name = name;
  info.summary = summary;
  info.create = [name, fn](const PassOptions&) -> std::unique_ptr<Pass> { return std::make_unique<FusePass>(name, fn); };
  return info;
}

}  // namespace

PassInfo fuse_residual_pass_info() {
  return fuse_pass_info("fuse-residual",
                        "fold each residual_add into the linear producing its operand (the add runs in the "
                        "linear's epilogue); before decompose",
                        fuse_residual);
}

PassInfo fuse_norm_pass_info() {
  return fuse_pass_info("fuse-norm",
                        "fold each rms_norm read only by linears into their prologue (each linear norms its x); "
                        "before decompose",
                        fuse_norm);
}

PassInfo fuse_rope_pass_info() {
  return fuse_pass_info("fuse-rope",
                        "fold a rope read only by a kv_append (as its k) into it (it ropes k while appending); "
                        "before decompose",
                        fuse_rope);
}

}  // namespace mpk
