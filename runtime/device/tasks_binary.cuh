// The binary elementwise family's task bodies: SiLU-and-multiply (exp correctly rounded
// through double), residual add and all_reduce over column tiles.
// Shapes are template parameters; descriptor pointers are pre-offset to the task's
// region, and every row stride is a compile-time constant. All arithmetic in f32, stores
// to bf16 round to nearest even, every operation in the CPU executor's order
// (docs/ir.md, runtime/cpu/numerics.h).
#pragma once

#include <cstdint>

#include "runtime/device/common.cuh"
#include "runtime/device/context.cuh"
#include "runtime/device/heads.cuh"

namespace mpk {
namespace dev {

// y = f(a, b) elementwise over COLS columns of B rows of STRIDE (slots::Binary).
template <int COLS, int B, int STRIDE, class F>
__device__ __forceinline__ void binary_elementwise(const TaskDesc& d, F f) {
  using Slot = slots::Binary;
  const bf16_t* a = dptr<const bf16_t>(d, Slot::kA);
  const bf16_t* bb = dptr<const bf16_t>(d, Slot::kB);
  bf16_t* y = dptr<bf16_t>(d, Slot::kY);
  #pragma unroll 4
  for (int e = threadIdx.x; e < B * COLS; e += kThreads) {
    const int64_t o = static_cast<int64_t>(e / COLS) * STRIDE + e % COLS;
    y[o] = f32_to_bf16(f(bf16_to_f32(ld_cg_bf16(&a[o])), bf16_to_f32(ld_cg_bf16(&bb[o]))));
  }
}

// silu(g) * u = g / (1 + exp(-g)) * u, as the CPU rounds it.
__device__ __forceinline__ float silu_mul(float g, float u) {
  return __fmul_rn(__fdiv_rn(g, __fadd_rn(1.0f, exp_rn(-g))), u);
}

// ptr: g + c0, u + c0, y + c0 (rows of STRIDE).
template <int COLS, int B, int STRIDE>
__device__ void task_silu_mul(const TaskDesc& d, TaskCtx& c) {
  binary_elementwise<COLS, B, STRIDE>(d, silu_mul);
}

// ptr: a + c0, b + c0, y + c0 (rows of STRIDE).
template <int COLS, int B, int STRIDE>
__device__ void task_residual_add(const TaskDesc& d, TaskCtx& c) {
  binary_elementwise<COLS, B, STRIDE>(d, [](float a, float b) { return __fadd_rn(a, b); });
}

__device__ __forceinline__ float ld_relaxed_sys_bf16(const bf16_t* p) {
  unsigned short v;
  asm volatile("ld.relaxed.sys.global.u16 %0, [%1];" : "=h"(v) : "l"(p) : "memory");
  return bf16_to_f32(v);
}

// ptr: a + c0, this rank's partial + c0, y + c0 (rows of STRIDE). y = a + partial of rank
// 0 + partial of rank 1 + ..., in that order (docs/ir.md "all_reduce"); rank q's partial
// is read at system scope through the peer delta (the dispatch warp acquired its writes).
template <int COLS, int B, int STRIDE>
__device__ void task_all_reduce(const TaskDesc& d, TaskCtx& c) {
  using Slot = slots::Binary;
  const KernelParams& p = *c.params;
  const bf16_t* a = dptr<const bf16_t>(d, Slot::kA);
  const char* part = reinterpret_cast<const char*>(dptr<const bf16_t>(d, Slot::kB));
  bf16_t* y = dptr<bf16_t>(d, Slot::kY);
  for (int e = threadIdx.x; e < B * COLS; e += kThreads) {
    const int64_t o = static_cast<int64_t>(e / COLS) * STRIDE + e % COLS;
    float acc = bf16_to_f32(ld_cg_bf16(&a[o]));
    for (int q = 0; q < p.ranks; ++q)
      acc = __fadd_rn(acc, ld_relaxed_sys_bf16(reinterpret_cast<const bf16_t*>(part + p.peer_delta[q]) + o));
    y[o] = f32_to_bf16(acc);
  }
}

}  // namespace dev
}  // namespace mpk
