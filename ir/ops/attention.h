// The attention family's operand forms: a plain attention, or one that fuse-attention
// made, which also norms, ropes and appends its own q and k heads (docs/ir.md).
#pragma once

#include "ir/module.h"

namespace mpk {

// The operands of an attention operator (docs/ir.md):
//   attention(q, k_cache, v_cache) -> (y)
//   fused (fuse-attention): attention(q, k, v, k_cache, v_cache[, q_norm_w, k_norm_w])
//     -> (y, k_cache, v_cache), with the rope attrs (and eps when normed): it norms and
//     ropes q and k at pos, appends k and v to the caches, then attends.
// Tensor ids, -1 where absent (and for every other operator kind).
struct AttentionForm {
  TensorId q = -1, k = -1, v = -1, k_cache = -1, v_cache = -1, q_norm = -1, k_norm = -1, y = -1;
  bool fused() const { return k >= 0; }
};
AttentionForm attention_form(const Operator& op);

// The cache rows (sequences) of operand rows [lo, hi) when `rows` operand rows share
// `sequences` cache rows, rows / sequences each (docs/ir.md "Prefill chunks").
inline Range sequences_of(Range r, int64_t rows, int64_t sequences) {
  const int64_t chunk = rows / sequences;
  return {r.lo / chunk, (r.hi + chunk - 1) / chunk};
}

}  // namespace mpk
