// The embedding family's task body: a column tile of the rows of the step's tokens
// (each row's prompt token at its position, then the previous step's argmax), a token
// clamped to the table.
// Shapes are template parameters; descriptor pointers are pre-offset to the task's
// region, and every row stride is a compile-time constant. All arithmetic in f32, stores
// to bf16 round to nearest even, every operation in the CPU executor's order
// (docs/ir.md, runtime/cpu/numerics.h).
#pragma once

#include <cstdint>

#include "runtime/device/common.cuh"
#include "runtime/device/context.cuh"
#include "runtime/device/positions.cuh"

namespace mpk {
namespace dev {

// slots::Embedding (rows of H); B rows (a prefill chunk's: batch x chunk), row r reading
// its sequence's prompt token at its position (positions.cuh).
template <int COLS, int H, int B>
__device__ void task_embedding(const TaskDesc& d, TaskCtx& c) {
  using Slot = slots::Embedding;
  const bf16_t* table = dptr<const bf16_t>(d, Slot::kTable);
  const int32_t* tokens = dptr<const int32_t>(d, Slot::kTokens);
  bf16_t* y = dptr<bf16_t>(d, Slot::kY);
  const KernelParams& p = *c.params;
  const int32_t vocab = arg_int(d, Slot::kVocab);
#pragma unroll 1
  for (int b = 0; b < B; ++b) {
    const RowPos at = row_pos(p, c.step, b);
    int32_t tok = at.pos < p.prompt_len ? p.prompt[at.seq * p.prompt_stride + at.pos] : ld_cg_i32(&tokens[b]);
    tok = tok < 0 ? 0 : (tok >= vocab ? vocab - 1 : tok);  // never read out of bounds
    const bf16_t* row = table + static_cast<int64_t>(tok) * H;
    #pragma unroll 4
    for (int i = threadIdx.x; i < COLS; i += kThreads) y[b * H + i] = ld_const_bf16(&row[i]);
  }
}

}  // namespace dev
}  // namespace mpk
