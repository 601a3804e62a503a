// decompose, attention family. Plain or fused (ir/ops/attention.h): a fused attention
// also norms and ropes its q heads from raw q, and appends k and v. With one split, an
// attention task serves `heads` query heads of one kv head: when that is the whole
// group it also appends the kv head; otherwise the kv head's tasks each prepare this
// position's k and v for themselves and one kv_append task per kv head, after all of
// them, stores them (docs/ir.md). With several splits, the kv_append tasks come first,
// then attention_partial tasks per (kv head, split) read what they stored, then one
// attention_merge per kv head. Every task serves a block of batch rows: all of them, or
// fewer, so that a batch's attention spreads over the SMs instead of looping over its rows.
#include <algorithm>
#include <string>
#include <vector>

#include "ir/error.h"
#include "passes/decompose/decomposer.h"

namespace mpk::decompose {
namespace {

// Auto rules (docs/passes.md). Splits: one up to S = 512, else about 128 positions each
// (splits follow the step: at the step's position p each attends about (p + 1) / splits),
// at most one SM per split of every kv head on half the SMs (on the H100: llama-3.2-1b at
// S = 1024, 4 / 8 / 16 splits 1.063 / 1.039 / 1.033 ms a token; qwen3-8b at 2048, 8 / 16
// splits 5.987 / 6.132 ms).
int64_t auto_attention_splits(int64_t seq, int64_t kv_heads, int64_t sms) {
  if (seq <= 512) return 1;
  return std::min(ceil_div(seq, 128), std::max<int64_t>(1, sms / (2 * kv_heads)));
}
// A prefill chunk's splits: one attention_partial task per (kv head, split) on every SM,
// at most one split per 32 positions. A chunk's rows attend over up to S positions each,
// and one task per kv head left most SMs idle (llama-3.2-1b at 512 positions, chunks of
// 16: the attention was 72 % of a layer's critical path, 191 us).
int64_t auto_chunk_splits(int64_t seq, int64_t kv_heads, int64_t sms) {
  return std::clamp<int64_t>(sms / kv_heads, 1, std::max<int64_t>(1, seq / 32));
}
// A prefill chunk's merge tasks: rows each so that every kv head's rows spread over the
// SMs (llama-3.2-1b's one merge per kv head over 16 rows took 63 us of a layer).
int64_t auto_merge_rows(int64_t rows, int64_t kv_heads, int64_t sms) {
  return ceil_div(rows, std::clamp<int64_t>(sms / kv_heads, 1, rows));
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
// Batch rows per task: the fewest for which `per_rows` tasks per block of rows, over all
// blocks, still fit on the SMs.
int64_t auto_attention_rows(int64_t batch, int64_t per_rows, int64_t sms) {
  const int64_t blocks = std::clamp<int64_t>(sms / std::max<int64_t>(per_rows, 1), 1, batch);
  return ceil_div(batch, blocks);
}

// The shape and the region helpers of one attention operator's tasks over batch rows
// [r0, r1).
struct Heads {
  Decomposer& d;
  const AttentionForm f;
  int64_t r0, r1, s, nkv, hd, g;
  Range rows() const { return {r0, r1}; }
  Range qcols(int64_t j0, int64_t j1) const { return {j0 * hd, j1 * hd}; }
  Range kcols(int64_t h) const { return {h * hd, (h + 1) * hd}; }
  Region cache(TensorId t, int64_t h, int64_t s0, int64_t s1) const {
    return d.reg(t, {sequences_of(rows(), d.shape(f.q)[0], d.shape(t)[0]), {s0, s1}, {h, h + 1}, {0, hd}});
  }
  Region norm_w(TensorId w) const { return d.reg(w, {{0, hd}}); }
  // Per (row, query head, position): q.k, p.v (2 hd each) and the softmax update.
  int64_t attn_flops(int64_t q_heads, int64_t positions) const { return (r1 - r0) * q_heads * positions * (4 * hd + 5); }
  // Per fused head (norm 4, RoPE 6 per element).
  int64_t prep_flops() const { return f.fused() ? (r1 - r0) * hd * (6 + (f.q_norm >= 0 ? 4 : 0)) : 0; }
  // The bytes of one stored position.
  int64_t append_bytes() const { return 2 * (r1 - r0) * hd * d.esize(f.k_cache); }

  void kv_append(int64_t h) const {
    std::vector<Region> reads = {d.reg(f.k, {rows(), kcols(h)}), d.reg(f.v, {rows(), kcols(h)})};
    if (f.k_norm >= 0) reads.push_back(norm_w(f.k_norm));
    const int64_t bytes = d.regions_bytes(reads) + append_bytes();
    d.task(TaskKind::kKvAppend, std::move(reads), {cache(f.k_cache, h, 0, s), cache(f.v_cache, h, 0, s)},
           prep_flops(), bytes);
  }

  // Attention tasks of `heads` query heads each (one split); a task of a whole group of
  // a fused attention appends its kv head.
  void attention_tasks(int64_t heads) const {
    const bool appends = f.fused() && heads == g;
    for (int64_t h = 0; h < nkv; ++h)
      for (int64_t j0 = h * g; j0 < (h + 1) * g; j0 += heads) {
        std::vector<Region> reads = {d.reg(f.q, {rows(), qcols(j0, j0 + heads)})};
        std::vector<Region> writes = {d.reg(f.y, {rows(), qcols(j0, j0 + heads)})};
        if (f.fused()) {
          reads.push_back(d.reg(f.k, {rows(), kcols(h)}));
          reads.push_back(d.reg(f.v, {rows(), kcols(h)}));
          if (f.q_norm >= 0) reads.insert(reads.end(), {norm_w(f.q_norm), norm_w(f.k_norm)});
        }
        if (appends) writes.insert(writes.end(), {cache(f.k_cache, h, 0, s), cache(f.v_cache, h, 0, s)});
        reads.insert(reads.end(), {cache(f.k_cache, h, 0, s), cache(f.v_cache, h, 0, s)});
        const int64_t bytes =
            f.fused() ? d.regions_bytes(reads) + d.region_bytes(writes[0]) + (appends ? append_bytes() : 0) : -1;
        d.task(TaskKind::kAttention, std::move(reads), std::move(writes),
               attn_flops(heads, s) + (heads + 1) * prep_flops(), bytes);
      }
  }
  void kv_appends() const {
    for (int64_t h = 0; h < nkv; ++h) kv_append(h);
  }

  // Split i covers the i-th part of the positions up to the step's (chunk's) last, which
  // the device computes at each step (docs/ir.md), so it reads the whole cache; its cost
  // is that of ceil(S / splits) positions. `part` is the operator's partials tensor [B,
  // nq, splits, hd + 2].
  void partials(int64_t splits, TensorId part) const {
    const int64_t most = ceil_div(s, splits);
    for (int64_t h = 0; h < nkv; ++h)
      for (int64_t i = 0; i < splits; ++i) {
        std::vector<Region> reads = {d.reg(f.q, {rows(), qcols(h * g, (h + 1) * g)})};
        if (f.q_norm >= 0) reads.push_back(norm_w(f.q_norm));
        const Region out = d.reg(part, {rows(), {h * g, (h + 1) * g}, {i, i + 1}, {0, hd + 2}});
        const int64_t bytes = d.regions_bytes(reads) + d.region_bytes(out) +
                              2 * d.region_bytes(cache(f.k_cache, h, 0, most));
        reads.insert(reads.end(), {cache(f.k_cache, h, 0, s), cache(f.v_cache, h, 0, s)});
        d.task(TaskKind::kAttentionPartial, std::move(reads), {out}, attn_flops(g, most) + g * prep_flops(), bytes);
      }
  }
  // Merge tasks per kv head over `per` rows each.
  void merges(int64_t splits, TensorId part, int64_t per) const {
    for (int64_t a = r0; a < r1; a += per) {
      const Range mr{a, std::min(r1, a + per)};
      for (int64_t h = 0; h < nkv; ++h)
        d.task(TaskKind::kAttentionMerge, {d.reg(part, {mr, {h * g, (h + 1) * g}, {0, splits}, {0, hd + 2}})},
               {d.reg(f.y, {mr, qcols(h * g, (h + 1) * g)})}, mr.size() * g * splits * (2 * hd + 5));
    }
  }
};

}  // namespace

void decompose_attention(Decomposer& d, const Operator& op) {
  const AttentionForm f = attention_form(op);
  const auto& cs = d.shape(f.k_cache);
  const int64_t batch = d.shape(f.q)[0], s = cs[1], nkv = cs[2], hd = cs[3];
  const int64_t nq = attr_int(op.attrs, "num_q_heads"), g = nq / nkv;
  const int64_t chunk = batch / cs[0];  // rows per sequence: > 1 in a prefill chunk
  const int64_t splits = d.options().attention_splits.value_or(
      chunk > 1 ? auto_chunk_splits(s, nkv, d.sms()) : auto_attention_splits(s, nkv, d.sms()));
  if (splits > s)
    throw Error("option 'attention-splits' (" + std::to_string(splits) + ") exceeds max_seq_len (" +
                std::to_string(s) + ") of operator '" + op.name + "'");
  // A fused attention of a prefill chunk appends every row before any row attends, so
  // its one-split tasks take whole groups and its tasks whole sequences (docs/ir.md).
  const bool whole = f.fused() && chunk > 1;
  const int64_t per_task =
      d.options().attention_heads.value_or(whole && splits == 1 ? g : auto_attention_heads(nq, g, hd, d.sms()));
  if (g % per_task != 0)
    throw Error("option 'attention-heads' (" + std::to_string(per_task) + ") does not divide the " +
                std::to_string(g) + " query heads per kv head of operator '" + op.name + "'");
  if (whole && splits == 1 && per_task != g)
    throw Error("option 'attention-heads' (" + std::to_string(per_task) + ") is below the " + std::to_string(g) +
                " query heads per kv head of operator '" + op.name +
                "': in a prefill chunk a fused attention's tasks take whole groups");
  int64_t rows = std::min(
      batch, d.options().attention_rows.value_or(auto_attention_rows(batch, splits == 1 ? nq / per_task : nkv * splits, d.sms())));
  if (whole && rows % chunk != 0) {
    if (d.options().attention_rows)
      throw Error("option 'attention-rows' (" + std::to_string(rows) + ") is not a multiple of the " +
                  std::to_string(chunk) + " rows of a sequence of operator '" + op.name +
                  "': in a prefill chunk a fused attention's tasks take whole sequences");
    rows = std::min(batch, ceil_div(rows, chunk) * chunk);
  }
  std::vector<Heads> blocks;  // the operator's tasks per block of batch rows, kind by kind (docs/ir.md, "Tasks")
  for (int64_t r0 = 0; r0 < batch; r0 += rows) blocks.push_back({d, f, r0, std::min(batch, r0 + rows), s, nkv, hd, g});
  if (splits == 1) {
    for (const Heads& b : blocks) b.attention_tasks(per_task);
    if (f.fused() && per_task != g)
      for (const Heads& b : blocks) b.kv_appends();
    return;
  }
  const std::string name = "attn_part." + (op.layer >= 0 ? std::to_string(op.layer) : op.name);
  const TensorId part = d.add_scratch(op, name, DType::kF32, {batch, nq, splits, hd + 2});
  if (f.fused())
    for (const Heads& b : blocks) b.kv_appends();
  for (const Heads& b : blocks) b.partials(splits, part);
  // A prefill chunk's merges spread over the SMs by rows (they read the rows' partials
  // alone); a decode's follow the blocks.
  for (const Heads& b : blocks)
    b.merges(splits, part, chunk > 1 ? auto_merge_rows(b.r1 - b.r0, nkv, d.sms()) : b.r1 - b.r0);
}

}  // namespace mpk::decompose
