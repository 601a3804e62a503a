// The kv_append family's task body: k and v of one kv head into the caches, each row at
// its sequence and position (positions.cuh), k normed and roped first where the operator
// says so (heads.cuh).
// Shapes are template parameters; descriptor pointers are pre-offset to the task's
// region, and every row stride is a compile-time constant. All arithmetic in f32, stores
// to bf16 round to nearest even, every operation in the CPU executor's order
// (docs/ir.md, runtime/cpu/numerics.h).
#pragma once

#include <cstdint>

#include "runtime/device/common.cuh"
#include "runtime/device/context.cuh"
#include "runtime/device/heads.cuh"
#include "runtime/device/positions.cuh"

namespace mpk {
namespace dev {

// slots::KvAppend: k and v rows of NKV*HD (B rows from a sequence's first), caches [B / C,
// S, NKV, HD] from that sequence. Row b writes its position, when it stores. ROPE: k is
// roped first (the RoPE table), after a k norm when EPS_BITS != 0 (its weight) — a
// kv_append of a fused attention operator, or one made by fuse-rope.
template <int HD, int B, int S, int NKV, int ROPE, int EPS_BITS>
__device__ void task_kv_append(const TaskDesc& d, TaskCtx& c) {
  using Slot = slots::KvAppend;
  const bf16_t* k = dptr<const bf16_t>(d, Slot::kK);
  const bf16_t* v = dptr<const bf16_t>(d, Slot::kV);
  bf16_t* kc = dptr<bf16_t>(d, Slot::kKCache);
  bf16_t* vc = dptr<bf16_t>(d, Slot::kVCache);
  if constexpr (ROPE) {
    const HeadIo io{nullptr, k, v, nullptr, dptr<const bf16_t>(d, Slot::kKNorm), dptr<const float2>(d, Slot::kRopeTable),
                    kc, vc, 0, NKV * HD};
    append_heads<HD, B, S, NKV, EPS_BITS>(io, *c.params, c.step, 0, c.scratch);
  } else {
#pragma unroll 4
    for (int u = threadIdx.x; u < B * HD; u += kThreads) {
      const int b = u / HD, i = u % HD;
      const RowPos at = row_pos(*c.params, c.step, b);
      if (!at.stores || at.pos >= S) continue;  // the host never runs past max_seq_len; stay in bounds anyway
      const int64_t dst = (static_cast<int64_t>(at.seq) * S + at.pos) * NKV * HD + i;
      kc[dst] = ld_cg_bf16(&k[b * NKV * HD + i]);
      vc[dst] = ld_cg_bf16(&v[b * NKV * HD + i]);
    }
  }
}

}  // namespace dev
}  // namespace mpk
