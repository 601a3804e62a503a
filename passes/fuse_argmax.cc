// fuse-argmax: logits = lm_head(...); tokens = argmax(logits)  ->
// (logits, tokens) = lm_head(...): each lm_head task also finds the largest logit of
// its vocabulary rows, so the argmax partial stage goes away (docs/ir.md). The logits
// are still written in full.
#include "passes/fuse_common.h"

namespace mpk {
namespace {

bool fuse_argmax(Program& p, std::vector<bool>& dead_op, std::vector<bool>& dead_tensor) {
  bool changed = false;
  for (OpId a = 0; a < static_cast<OpId>(p.ops.size()); ++a) {
    const Operator& argmax = p.ops[a];
    if (dead_op[a] || argmax.kind != OpKind::kArgmax || argmax.inputs.size() != 1 || argmax.outputs.size() != 1)
      continue;
    const TensorId logits = argmax.inputs[0];
    if (p.writers[logits].size() != 1) continue;
    const OpId l = p.writers[logits][0];
    const Operator& head = p.ops[l];
    if (head.kind != OpKind::kLmHead || head.outputs.size() != 1) continue;
    if (attr_str_or(head.attrs, "parallel", "") != attr_str_or(argmax.attrs, "parallel", "")) continue;
    Operator fused = head;
    fused.outputs.push_back(argmax.outputs[0]);
    changed |= fuse_group(p, {l, a}, std::move(fused), {}, dead_op, dead_tensor);
  }
  return changed;
}

PassInfo fuse_argmax_pass_info() {
  return fuse_pass_info("fuse-argmax",
                        "fold the argmax into the lm_head that writes its logits (each lm_head task also "
                        "writes the argmax partial of its rows; one argmax_reduce remains); before decompose",
                        fuse_argmax);
}

}  // namespace

MPK_PASS(fuse_argmax_pass_info);

}  // namespace mpk
