// fuse-attention (after fuse-rope): the attention block of one layer becomes one
// attention operator that norms (qwen3) and ropes q and k, appends k and v to the
// caches and attends (docs/ir.md):
//   [qn = qk_norm(q, wq)]; qr = rope(qn | q); [kn = qk_norm(k, wk)];
//   kv_append(kn | k, v){rope} -> (k_cache, v_cache); y = attention(qr, k_cache, v_cache)
//   ->  y, k_cache, v_cache = attention(q, k, v, k_cache, v_cache[, wq, wk]){rope[, eps]}
// So q and k reach attention without the rope, norm and append stages.
#include "passes/fuse_common.h"

namespace mpk {
namespace {

// The qk_norm that alone writes `t`, read only by `reader`, or -1.
OpId norm_of(const Program& p, TensorId t, OpId reader) {
  if (p.writers[t].size() != 1) return -1;
  const OpId n = p.writers[t][0];
  const Operator& op = p.ops[n];
  return op.kind == OpKind::kQkNorm && op.inputs.size() == 2 && only_link(p, t, n, reader) ? n : -1;
}

// The parts of one attention block around attention operator `a`.
struct Block {
  OpId q_rope = -1, kv_append = -1, q_norm = -1, k_norm = -1;
};

// Finds the block, or returns false when its shape is not the one fuse-attention fuses.
bool find_block(const Program& p, OpId a, Block& blk) {
  const Operator& att = p.ops[a];
  const AttentionForm f = attention_form(att);
  if (att.inputs.size() != 3 || att.outputs.size() != 1) return false;
  const TensorId qr = f.q, kc = f.k_cache, vc = f.v_cache;
  if (p.writers[qr].size() != 1 || p.writers[kc].size() != 1 || p.writers[vc] != p.writers[kc]) return false;
  blk.q_rope = p.writers[qr][0];
  blk.kv_append = p.writers[kc][0];
  const Operator& rope = p.ops[blk.q_rope];
  const Operator& kv = p.ops[blk.kv_append];
  if (rope.kind != OpKind::kRope || rope.inputs.size() != 1 || !only_link(p, qr, blk.q_rope, a) ||
      p.tensor(qr).dtype != DType::kBF16)
    return false;
  // The kv_append ropes k (fuse-rope) exactly as q is roped, and writes (k_cache, v_cache).
  if (kv.kind != OpKind::kKvAppend || kv.inputs.size() != 2 || kv.outputs != std::vector<TensorId>{kc, vc} ||
      !kv.attrs.count("theta") || kv.attrs != rope.attrs)
    return false;
  blk.q_norm = norm_of(p, rope.inputs[0], blk.q_rope);
  blk.k_norm = norm_of(p, kv.inputs[0], blk.kv_append);
  if ((blk.q_norm < 0) != (blk.k_norm < 0)) return false;
  if (blk.q_norm < 0) return true;
  // The fused operator rounds the normed heads to bf16, as qn and kn store them.
  if (p.tensor(rope.inputs[0]).dtype != DType::kBF16 || p.tensor(kv.inputs[0]).dtype != DType::kBF16) return false;
  const Attrs &qa = p.ops[blk.q_norm].attrs, &ka = p.ops[blk.k_norm].attrs;
  // Both norms alike, over the heads the rope turns.
  return qa.count("eps") && qa.count("head_dim") && ka.count("eps") && ka.count("head_dim") &&
         qa.at("eps") == ka.at("eps") && qa.at("head_dim") == ka.at("head_dim") &&
         rope.attrs.count("head_dim") && qa.at("head_dim") == rope.attrs.at("head_dim");
}

bool fuse_attention(Program& p, std::vector<bool>& dead_op, std::vector<bool>& dead_tensor) {
  bool changed = false;
  for (OpId a = 0; a < static_cast<OpId>(p.ops.size()); ++a) {
    Block blk;
    if (dead_op[a] || p.ops[a].kind != OpKind::kAttention || !find_block(p, a, blk)) continue;
    const Operator& att = p.ops[a];
    const Operator& rope = p.ops[blk.q_rope];
    const Operator& kv = p.ops[blk.kv_append];
    const bool normed = blk.q_norm >= 0;
    const TensorId q = normed ? p.ops[blk.q_norm].inputs[0] : rope.inputs[0];
    const TensorId k = normed ? p.ops[blk.k_norm].inputs[0] : kv.inputs[0];
    Operator fused{att.name, OpKind::kAttention, {q, k, kv.inputs[1], kv.outputs[0], kv.outputs[1]},
                   {att.outputs[0], kv.outputs[0], kv.outputs[1]}, att.attrs, att.layer};
    for (const auto& [key, value] : rope.attrs) fused.attrs[key] = value;  // head_dim agrees (verifier)
    std::vector<OpId> group = {blk.q_rope, blk.kv_append, a};
    std::vector<TensorId> dropped = {att.inputs[0]};
    if (normed) {
      const Operator &qn = p.ops[blk.q_norm], &kn = p.ops[blk.k_norm];
      fused.inputs.push_back(qn.inputs[1]);
      fused.inputs.push_back(kn.inputs[1]);
      fused.attrs["eps"] = qn.attrs.at("eps");
      group.push_back(blk.q_norm);
      group.push_back(blk.k_norm);
      dropped.push_back(qn.outputs[0]);
      dropped.push_back(kn.outputs[0]);
    }
    changed |= fuse_group(p, std::move(group), std::move(fused), dropped, dead_op, dead_tensor);
  }
  return changed;
}

PassInfo fuse_attention_pass_info() {
  return fuse_pass_info("fuse-attention",
                        "fold the q rope, the roping kv_append (fuse-rope) and the qk_norms (qwen3) into the "
                        "attention (per kv head it norms and ropes q and k, appends k and v, and attends); "
                        "after fuse-rope, before decompose",
                        fuse_attention);
}

}  // namespace

MPK_PASS(fuse_attention_pass_info);

}  // namespace mpk
