// codegen, kv_append family: task_kv_append<HD, B, S, NKV, ROPE, EPS_BITS> per kv head,
// for a kv_append operator (k, v -> caches; with rope attrs from fuse-rope) or the
// kv_append tasks of a fused attention (runtime/device/tasks_kv_append.cuh), over the
// task's rows (B: whole sequences, a prefill chunk's C rows each; the k and v pointers
// offset to its first row, the caches to its first sequence).
#include "codegen/ops/desc_builder.h"

namespace mpk::codegen {

void describe_kv_append(DescBuilder& b, TaskId t, TaskDescription& out) {
  using Slot = abi::slots::KvAppend;
  const Operator& op = b.op_of(t);
  const AttentionForm af = attention_form(op);
  const bool fused = af.fused();
  const TensorId k = fused ? af.k : b.input(t, 0), v = fused ? af.v : b.input(t, 1);
  const TensorId kc = fused ? af.k_cache : b.output(t, 0), vc = fused ? af.v_cache : b.output(t, 1);
  const Region& wr = b.find(t, b.task(t).writes, kc, "k_cache");
  const Range rows = b.find(t, b.task(t).reads, k, "k").dims[0];
  const auto& shape = b.tensor(kc).shape;  // [B, S, nkv, hd]
  const int64_t h = wr.dims[2].lo, hd = shape[3], s0 = wr.dims[0].lo;
  const int64_t kv_row = shape[2] * hd, cache_row = shape[1] * kv_row;  // elements per row, per sequence
  if (wr.dims[2].size() != 1) b.fail(t, "expects one KV head");
  if (rows.lo != s0 * b.out.chunk || rows.size() != wr.dims[0].size() * b.out.chunk)
    b.fail(t, "its rows are not the whole sequences of the cache rows it writes");
  b.check_head_dim(t, hd);
  b.reloc(t, Slot::kK, k, rows.lo * kv_row + h * hd);
  b.reloc(t, Slot::kV, v, rows.lo * kv_row + h * hd);
  b.reloc(t, Slot::kKCache, kc, s0 * cache_row + h * hd);
  b.reloc(t, Slot::kVCache, vc, s0 * cache_row + h * hd);
  const bool rope = op.attrs.count("theta") > 0;  // ropes k while appending
  if (rope) b.reloc_rope(t, Slot::kRopeTable, op.attrs);
  const int32_t eps = fused ? DescBuilder::qk_norm_eps_bits(op) : 0;
  if (eps != 0) b.reloc(t, Slot::kKNorm, af.k_norm, 0);
  out.call = "task_kv_append" + DescBuilder::targs({hd, rows.size(), shape[1], shape[2], rope ? 1 : 0, eps});
  if (rope)
    b.scratch(static_cast<int>(abi::head_scratch_bytes(hd, 0, true, abi::head_prep_rows(hd, 1, rows.size(), b.warps * 32))));
}

}  // namespace mpk::codegen
