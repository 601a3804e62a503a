// Where a task's rows stand in their sequences (docs/ir.md "Prefill chunks"): the device's
// statement of ir/row_positions.h, the one every position-aware body (embedding, rope,
// kv_append, attention, heads.cuh) and the dispatch warp's L2 prefetch ask. Launch step s
// is the module's step first_step + s; row r of it is chunk row r % C of sequence r / C,
// at position min((first_step + s) * C + r % C, E - 1), storing only below E. A decode
// module (C = 1) has no end: every row at position first_step + s, every row stores.
#pragma once

#include <cstdint>

#include "runtime/device/config.cuh"

namespace mpk {
namespace dev {

struct RowPos {
  int32_t pos;  // the position the row computes
  int32_t seq;  // its sequence: its cache row, counted like the rows
  bool stores;  // whether it stores into the KV caches
};

// Row `row` at launch step `step`. A task whose pointers are offset to its first row passes
// that row's chunk row plus its own row index (slots::Attention::kChunkRow0; kv_append
// tasks start at a sequence), so that seq counts from the task's first sequence.
__device__ __forceinline__ RowPos row_pos(const KernelParams& p, int32_t step, int32_t row) {
  if constexpr (kChunk == 1) {
    return {p.first_step + step, row, true};
  } else {
    const int32_t u = (p.first_step + step) * kChunk + row % kChunk;
    return {u < p.end ? u : p.end - 1, row / kChunk, u < p.end};
  }
}

// The first position launch step `step` computes: the caches below it were written by
// earlier steps (or an earlier launch).
__device__ __forceinline__ int32_t step_first_pos(const KernelParams& p, int32_t step) {
  return (p.first_step + step) * kChunk;
}

// The positions [lo, hi) that split `split` of `splits` attention partial tasks attends
// at the step whose first position is pos0: the positions up to the step's last (its
// chunk's), [0, min(pos0 + C, S)), in parts of the ceiling of their count over `splits`
// rounded up to 16, at most ceil(S / splits), so that the splits share the work at every
// step (ir/row_positions.h, RowPositions::attention_split).
struct PosRange {
  int32_t lo, hi;
};
__device__ __forceinline__ PosRange attention_split(int32_t pos0, int32_t split, int32_t splits, int32_t S) {
  const int32_t span = min(pos0 + kChunk, S);
  const int32_t len = min((span + 16 * splits - 1) / (16 * splits) * 16, (S + splits - 1) / splits);
  const int32_t lo = min(span, split * len);
  return {lo, min(span, lo + len)};
}

}  // namespace dev
}  // namespace mpk
