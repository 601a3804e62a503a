// decompose, attention family. Plain or fused (ir/ops/attention.h): a fused attention
// also norms and ropes its q heads from raw q, and appends k and v. With one split, an
// attention task serves `heads` query heads of one kv head: when that is the whole
// group it also appends the kv head; otherwise the kv head's tasks each prepare this
// position's k and v for themselves and one kv_append task per kv head, after all of
// them, stores them (docs/ir.md). With several splits, the kv_append tasks come first,
// then attention_partial tasks per (kv head, split) read what they stored, then one
// attention_merge per kv head.
#include <string>

#include "ir/error.h"
#include "passes/decompose/decomposer.h"

namespace mpk::decompose {
namespace {

// Auto rules (docs/passes.md). Splits: one up to S = 512, else about 256 positions
// each, at most an SM per split of every kv head.
int64_t auto_attention_splits(int64_t seq, int64_t kv_heads, int64_t sms) {
  if (seq <= 512) return 1;
  return std::min(ceil_div(seq, 256), std::max<int64_t>(1, sms / kv_heads));
}
// Query heads per attention task (one split): the most, dividing the group, whose
// outputs (heads x head_dim) stay within 128 values, so that a kv head's query heads
// attend on several SMs (on the H100, llama-3.2-1b's 64-wide heads in pairs and
// qwen3-8b's 128-wide ones alone measured fastest); the whole group where that would
// need more tasks than the machine has SMs.
int64_t auto_attention_heads(int64_t q_heads, int64_t group, int64_t head_dim, int64_t sms) {
  int64_t heads = 1;
  for (int64_t h = 2; h <= group; ++h)
    if (group % h == 0 && h * head_dim <= 128) heads = h;
  return q_heads / heads <= sms ? heads : group;
}

// The shape and the region helpers of one attention operator's tasks.
struct Heads {
  Decomposer& d;
  const AttentionForm f;
  int64_t b, s, nkv, hd, g;
  Range qcols(int64_t j0, int64_t j1) const { return {j0 * hd, j1 * hd}; }
  Range kcols(int64_t h) const { return {h * hd, (h + 1) * hd}; }
  Region cache(TensorId t, int64_t h, int64_t s0, int64_t s1) const {
    return d.reg(t, {{0, b}, {s0, s1}, {h, h + 1}, {0, hd}});
  }
  Region norm_w(TensorId w) const { return d.reg(w, {{0, hd}}); }
  // Per (row, query head, position): q.k, p.v (2 hd each) and the softmax update.
  int64_t attn_flops(int64_t q_heads, int64_t positions) const { return b * q_heads * positions * (4 * hd + 5); }
  // Per fused head (norm 4, RoPE 6 per element).
  int64_t prep_flops() const { return f.fused() ? b * hd * (6 + (f.q_norm >= 0 ? 4 : 0)) : 0; }
  // The bytes of one stored position.
  int64_t append_bytes() const { return 2 * b * hd * d.esize(f.k_cache); }

  void kv_append(int64_t h) const {
    std::vector<Region> reads = {d.reg(f.k, {{0, b}, kcols(h)}), d.reg(f.v, {{0, b}, kcols(h)})};
    if (f.k_norm >= 0) reads.push_back(norm_w(f.k_norm));
    const int64_t bytes = d.regions_bytes(reads) + append_bytes();
    d.task(TaskKind::kKvAppend, std::move(reads), {cache(f.k_cache, h, 0, s), cache(f.v_cache, h, 0, s)},
           prep_flops(), bytes);
  }

  void one_split(int64_t heads) const {
    const bool appends = f.fused() && heads == g;
    for (int64_t h = 0; h < nkv; ++h)
      for (int64_t j0 = h * g; j0 < (h + 1) * g; j0 += heads) {
        std::vector<Region> reads = {d.reg(f.q, {{0, b}, qcols(j0, j0 + heads)})};
        std::vector<Region> writes = {d.reg(f.y, {{0, b}, qcols(j0, j0 + heads)})};
        if (f.fused()) {
          reads.push_back(d.reg(f.k, {{0, b}, kcols(h)}));
          reads.push_back(d.reg(f.v, {{0, b}, kcols(h)}));
          if (f.q_norm >= 0) reads.insert(reads.end(), {norm_w(f.q_norm), norm_w(f.k_norm)});
        }
        if (appends) writes.insert(writes.end(), {cache(f.k_cache, h, 0, s), cache(f.v_cache, h, 0, s)});
        reads.insert(reads.end(), {cache(f.k_cache, h, 0, s), cache(f.v_cache, h, 0, s)});
        const int64_t bytes =
            f.fused() ? d.regions_bytes(reads) + d.region_bytes(writes[0]) + (appends ? append_bytes() : 0) : -1;
        d.task(TaskKind::kAttention, std::move(reads), std::move(writes),
               attn_flops(heads, s) + (heads + 1) * prep_flops(), bytes);
      }
    if (f.fused() && !appends)
      for (int64_t h = 0; h < nkv; ++h) kv_append(h);
  }

  // Balanced position ranges: split i covers [i*S/splits, (i+1)*S/splits).
  void split(const Operator& op, int64_t splits) const {
    if (f.fused())
      for (int64_t h = 0; h < nkv; ++h) kv_append(h);
    const std::string part_name = "attn_part." + (op.layer >= 0 ? std::to_string(op.layer) : op.name);
    const TensorId part = d.add_scratch(op, part_name, DType::kF32, {b, nkv * g, splits, hd + 2});
    for (int64_t h = 0; h < nkv; ++h)
      for (int64_t i = 0; i < splits; ++i) {
        const int64_t s0 = i * s / splits, s1 = (i + 1) * s / splits;
        std::vector<Region> reads = {d.reg(f.q, {{0, b}, qcols(h * g, (h + 1) * g)})};
        if (f.q_norm >= 0) reads.push_back(norm_w(f.q_norm));
        reads.insert(reads.end(), {cache(f.k_cache, h, s0, s1), cache(f.v_cache, h, s0, s1)});
        d.task(TaskKind::kAttentionPartial, std::move(reads),
               {d.reg(part, {{0, b}, {h * g, (h + 1) * g}, {i, i + 1}, {0, hd + 2}})},
               attn_flops(g, s1 - s0) + g * prep_flops());
      }
    for (int64_t h = 0; h < nkv; ++h)
      d.task(TaskKind::kAttentionMerge, {d.reg(part, {{0, b}, {h * g, (h + 1) * g}, {0, splits}, {0, hd + 2}})},
             {d.reg(f.y, {{0, b}, qcols(h * g, (h + 1) * g)})}, b * g * splits * (2 * hd + 5));
  }
};

}  // namespace

void decompose_attention(Decomposer& d, const Operator& op) {
  const AttentionForm f = attention_form(op);
  const auto& cs = d.shape(f.k_cache);
  const int64_t nq = attr_int(op.attrs, "num_q_heads");
  const Heads heads{d, f, cs[0], cs[1], cs[2], cs[3], nq / cs[2]};
  const int64_t splits = d.options().attention_splits.value_or(auto_attention_splits(heads.s, heads.nkv, d.sms()));
  if (splits > heads.s)
    throw Error("option 'attention-splits' (" + std::to_string(splits) + ") exceeds max_seq_len (" +
                std::to_string(heads.s) + ") of operator '" + op.name + "'");
  const int64_t per_task = d.options().attention_heads.value_or(auto_attention_heads(nq, heads.g, heads.hd, d.sms()));
  if (heads.g % per_task != 0)
    throw Error("option 'attention-heads' (" + std::to_string(per_task) + ") does not divide the " +
                std::to_string(heads.g) + " query heads per kv head of operator '" + op.name + "'");
  if (splits == 1)
    heads.one_split(per_task);
  else
    heads.split(op, splits);
}

}  // namespace mpk::decompose
