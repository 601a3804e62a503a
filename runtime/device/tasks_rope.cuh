// The rope family's task body: rotate-half RoPE of whole heads at each row's position,
// from the (cos, sin) table the host computed as the CPU does (ir/rope.h).
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

// slots::Rope (the table [S][HD/2]); NH whole heads of all B rows, row b at its own
// position (positions.cuh).
template <int HD, int NH, int B, int STRIDE, int S>
__device__ void task_rope(const TaskDesc& d, TaskCtx& c) {
  constexpr int kHalf = HD / 2;
  using Slot = slots::Rope;
  const bf16_t* x = dptr<const bf16_t>(d, Slot::kX);
  bf16_t* y = dptr<bf16_t>(d, Slot::kY);
  const float2* table = dptr<const float2>(d, Slot::kTable);
  // Row b's (cos, sin) row.
  const auto angles = [&](int b) {
    return table + static_cast<int64_t>(min(row_pos(*c.params, c.step, b).pos, S - 1)) * kHalf;
  };
  constexpr int kItems = B * NH * kHalf;
  constexpr int kPer = (kItems + kThreads - 1) / kThreads;
  // Every load first (y may alias x), then the rotations.
  float x0[kPer], x1[kPer];
  float2 t[kPer];
#pragma unroll
  for (int j = 0; j < kPer; ++j) {
    const int u = threadIdx.x + j * kThreads;
    if (u < kItems) {
      const int i = u % kHalf, h = (u / kHalf) % NH, b = u / (kHalf * NH);
      const int64_t base = static_cast<int64_t>(b) * STRIDE + h * HD;
      x0[j] = bf16_to_f32(ld_cg_bf16(&x[base + i]));
      x1[j] = bf16_to_f32(ld_cg_bf16(&x[base + i + kHalf]));
      t[j] = __ldg(&angles(b)[i]);
    }
  }
#pragma unroll
  for (int j = 0; j < kPer; ++j) {
    const int u = threadIdx.x + j * kThreads;
    if (u < kItems) {
      const int i = u % kHalf, h = (u / kHalf) % NH, b = u / (kHalf * NH);
      const int64_t base = static_cast<int64_t>(b) * STRIDE + h * HD;
      rope_rotate(x0[j], x1[j], t[j], y[base + i], y[base + i + kHalf]);
    }
  }
}

}  // namespace dev
}  // namespace mpk
