// fuse-residual: folds a residual_add into the linear that produces one of its operands,
// so the add happens in the linear's epilogue (docs/ir.md, linear with a residual):
//   y = linear(x, W); h2 = residual_add(h, y)   ->   h2 = linear(x, W, residual = h)
// One dependent stage less per residual, and the intermediate y is never stored. It
// applies when y has that linear as its only writer and the add as its only reader, and
// y and h2 have the same dtype (then the fused rounding is the unfused one exactly).
// Runs on operators only: before decompose.
#include <algorithm>

#include "passes/pass.h"
#include "passes/registry.h"

namespace mpk {
namespace {

constexpr const char* kPass = "fuse-residual";

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

class FuseResidualPass : public Pass {
 public:
  PassResult run(Module& m) override {
    if (!m.graph.empty())
      return PassResult::failure(std::string(kPass) + " runs on operators: put it before decompose");
    Program& p = m.program;
    p.rebuild_use_lists();
    std::vector<bool> dead_op(p.ops.size(), false), dead_tensor(p.tensors.size(), false);
    bool changed = false;
    for (OpId a = 0; a < static_cast<OpId>(p.ops.size()); ++a) {
      const Operator& add = p.ops[a];
      if (add.kind != OpKind::kResidualAdd || add.inputs.size() != 2 || add.outputs.size() != 1) continue;
      for (int side = 1; side >= 0; --side) {  // the usual order is residual_add(h, y)
        const TensorId y = add.inputs[side], h = add.inputs[1 - side], out = add.outputs[0];
        if (p.writers[y].size() != 1 || p.readers[y].size() != 1 || y == h) continue;
        Operator& lin = p.ops[p.writers[y][0]];
        if (lin.kind != OpKind::kLinear || lin.inputs.size() != 2 || dead_op[p.writers[y][0]]) continue;
        if (p.tensor(y).dtype != p.tensor(out).dtype || p.tensor(y).shape != p.tensor(out).shape) continue;
        lin.inputs.push_back(h);
        lin.outputs[0] = out;
        dead_op[a] = true;
        dead_tensor[y] = true;
        changed = true;
        break;
      }
    }
    if (!changed) return PassResult::ok(false);
    std::vector<Operator> kept;
    for (size_t o = 0; o < p.ops.size(); ++o)
      if (!dead_op[o]) kept.push_back(std::move(p.ops[o]));
    p.ops = std::move(kept);
    drop_tensors(p, dead_tensor);
    p.rebuild_use_lists();
    return PassResult::ok(true);
  }
};

}  // namespace

PassInfo fuse_residual_pass_info() {
  PassInfo info;
  info.name = kPass;
  info.summary =
      "fold each residual_add into the linear producing its operand (the add runs in the linear's "
      "epilogue); before decompose";
  info.create = [](const PassOptions&) -> std::unique_ptr<Pass> { return std::make_unique<FuseResidualPass>(); };
  return info;
}

}  // namespace mpk
