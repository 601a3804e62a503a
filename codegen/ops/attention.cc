// codegen, attention family: task_attention (one split: query heads of one kv head;
// fused, appending), task_attention_partial and task_attention_merge, and the dispatch
// warp's L2 prefetch of an attention task's cache rows (runtime/device/tasks_attention.cuh).
// A task of rows [r0, r1) gets its pointers offset to row r0 (the caches to its
// sequence, r0 / C in a prefill chunk of C rows per sequence, with the chunk row r0 % C in
// slots::Attention::kChunkRow0) and the bodies' row count r1 - r0.
#include <algorithm>

#include "codegen/ops/desc_builder.h"

namespace mpk::codegen {
namespace {

using Slot = abi::slots::Attention;

// The least scratch of a decode attention (runtime/device/tasks_attention.cuh, Attend):
// its V ring grows into whatever scratch the kernel has beyond it.
int attention_scratch(int64_t hd, int64_t g, int64_t rmax) {
  return static_cast<int>(abi::attn_scratch(hd, g, rmax, abi::attn_scratch_tiles(hd, rmax, false)).bytes);
}

void describe_merge(DescBuilder& b, TaskId t, TaskDescription& out) {
  const Region& pr = b.first_of_dtype(t, b.task(t).reads, DType::kF32, "attn_part");
  const Tensor& part = b.tensor(pr.tensor);
  const int64_t nq = part.shape[1], splits = part.shape[2], hd = part.shape[3] - 2;
  const int64_t nkv = attr_int(b.op_of(t).attrs, "num_kv_heads");
  const int64_t G = nq / nkv, h = pr.dims[1].lo / G, b0 = pr.dims[0].lo;
  b.reloc(t, abi::slots::AttentionMerge::kPart, pr.tensor, (b0 * nq + h * G) * splits * (hd + 2));
  b.reloc(t, abi::slots::AttentionMerge::kY, b.output(t, 0), (b0 * nq + h * G) * hd);
  out.call = "task_attention_merge" + DescBuilder::targs({hd, G, pr.dims[0].size(), nkv, splits});
}

}  // namespace

// A fused attention (fuse-attention) reads raw q, k and v and prepares its heads.
void describe_attention(DescBuilder& b, TaskId t, TaskDescription& out) {
  const Task& task = b.task(t);
  if (task.kind == TaskKind::kAttentionMerge) return describe_merge(b, t, out);
  const Operator& op = b.op_of(t);
  const AttentionForm af = attention_form(op);
  const bool fused = af.fused();
  const TensorId q = af.q, kc = af.k_cache, vc = af.v_cache;
  if (q < 0 || af.y < 0) b.fail(t, "operator has too few operands");
  const Region& kr = b.find(t, task.reads, kc, "k_cache");
  const Range rows = b.find(t, task.reads, q, "q").dims[0];
  const auto& shape = b.tensor(kc).shape;
  const int64_t r0 = rows.lo, B = rows.size(), S = shape[1], nkv = shape[2], hd = shape[3], C = b.out.chunk;
  if (kr.dims[0].lo != r0 / C) b.fail(t, "its first row is not of the first sequence of the caches it reads");
  const int64_t nq = attr_int(op.attrs, "num_q_heads");
  if (nq % nkv != 0) b.fail(t, "num_q_heads is not a multiple of num_kv_heads");
  const int64_t G = nq / nkv, h = kr.dims[2].lo;
  if (kr.dims[2].size() != 1) b.fail(t, "expects one KV head");
  b.check_head_dim(t, hd);
  // An attention task serves query heads [j0, j0 + heads) of kv head h (partials all G).
  int64_t j0 = h * G, heads = G;
  if (task.kind == TaskKind::kAttention) {
    const Range yc = b.find(t, task.writes, af.y, "output").dims[1];
    j0 = yc.lo / hd, heads = yc.size() / hd;
    if (yc.lo % hd != 0 || yc.hi % hd != 0 || j0 / G != h || (j0 + heads - 1) / G != h)
      b.fail(t, "output is not whole query heads of its KV head");
  }
  const int64_t q_row = nq * hd, kv_row = nkv * hd, cache_row = S * kv_row;  // elements per row, per sequence
  b.reloc(t, Slot::kQ, q, r0 * q_row + j0 * hd);
  b.reloc(t, Slot::kKCache, kc, r0 / C * cache_row + h * hd);
  b.reloc(t, Slot::kVCache, vc, r0 / C * cache_row + h * hd);
  DescBuilder::set_arg(out.d, Slot::kScale, float_bits(static_cast<float>(attr_float(op.attrs, "scale"))));
  DescBuilder::set_arg(out.d, Slot::kChunkRow0, r0 % C);
  if (heads > b.warps) b.fail(t, "more query heads per task than warps");
  const int32_t eps = fused ? DescBuilder::qk_norm_eps_bits(op) : 0;
  if (fused) {
    b.reloc(t, Slot::kK, af.k, r0 * kv_row + h * hd);
    b.reloc(t, Slot::kV, af.v, r0 * kv_row + h * hd);
    b.reloc_rope(t, Slot::kRopeTable, op.attrs);
    if (eps != 0) {
      b.reloc(t, Slot::kQNorm, af.q_norm, 0);
      b.reloc(t, Slot::kKNorm, af.k_norm, 0);
    }
  }
  const std::string form = std::string(fused ? ", true, " : ", false, ") + std::to_string(eps);
  const bool partial = task.kind == TaskKind::kAttentionPartial;
  const Region* pr = partial ? &b.first_of_dtype(t, task.writes, DType::kF32, "attn_part") : nullptr;
  const int64_t splits = partial ? b.tensor(pr->tensor).shape[2] : 0;  // attn_part [B, nq, splits, hd + 2]
  if (b.opt.l2_prefetch)
    out.prefetch = "attention_prefetch" + DescBuilder::targs({hd, B, S, nkv, splits}) + "(d, step, lane)";
  if (!partial) {
    b.reloc(t, Slot::kOut, af.y, r0 * q_row + j0 * hd);
    const bool appends =
        std::any_of(task.writes.begin(), task.writes.end(), [&](const Region& r) { return r.tensor == kc; });
    // A prefill chunk's row attends the rows before it in its chunk: a fused task stores
    // them all first (runtime/device/tasks_attention.cuh), so it takes whole sequences.
    if (fused && C > 1 && (!appends || r0 % C != 0 || B % C != 0))
      b.fail(t, "a fused attention task of a prefill chunk must append whole sequences (decompose gives it the "
                "query-head group and whole sequences)");
    out.call = "task_attention" + DescBuilder::targs({hd, heads, B, S, nkv, nq}, form + (appends ? ", true" : ", false"));
    // A fused task prepares each row's heads, and in a prefill chunk first appends its rows
    // (runtime/device/heads.cuh, append_heads).
    int64_t heads_bytes = fused ? abi::head_scratch_bytes(hd, heads, true, 1) : 0;
    if (fused && C > 1)
      heads_bytes = std::max(heads_bytes, abi::head_scratch_bytes(hd, 0, true, abi::head_prep_rows(hd, 1, B, b.warps * 32)));
    b.scratch(attention_scratch(hd, heads, S) + static_cast<int>(heads_bytes));
    return;
  }
  const int64_t s = pr->dims[2].lo;
  b.reloc(t, Slot::kOut, pr->tensor, ((r0 * nq + h * G) * splits + s) * (hd + 2));
  DescBuilder::set_arg(out.d, Slot::kSplit, s);
  const int64_t rmax = (S + splits - 1) / splits;  // the longest split range
  // A split follows the step's positions (runtime/device/positions.cuh, attention_split).
  if (kr.dims[1].size() != S) b.fail(t, "an attention partial must read the whole cache (its split follows the step)");
  out.call = "task_attention_partial" + DescBuilder::targs({hd, G, B, S, nkv, splits, rmax}, form);
  // A prefill chunk's rows attend together (runtime/device/tasks_attention.cuh, AttendRows).
  b.scratch(C > 1 ? static_cast<int>(abi::attn_rows_scratch(hd, G, B, rmax, fused).bytes)
                  : attention_scratch(hd, G, rmax) + (fused ? static_cast<int>(abi::head_scratch_bytes(hd, G, false, 1)) : 0));
}

}  // namespace mpk::codegen
