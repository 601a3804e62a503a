// The norm family's task bodies: RMSNorm over whole rows and the per-head q/k RMSNorm,
// sums of squares in the canonical lane order (lane_order.cuh).
// Shapes are template parameters; descriptor pointers are pre-offset to the task's
// region, and every row stride is a compile-time constant. All arithmetic in f32, stores
// to bf16 round to nearest even, every operation in the CPU executor's order
// (docs/ir.md, runtime/cpu/numerics.h).
#pragma once

#include <cstdint>

#include "runtime/device/common.cuh"
#include "runtime/device/context.cuh"
#include "runtime/device/heads.cuh"
#include "runtime/device/lane_order.cuh"

namespace mpk {
namespace dev {

template <int H>
struct RmsNormScratch {
  static constexpr int kBytes = ((H * 2 + 15) / 16) * 16 + 16;
};

// slots::Norm (whole rows of H). Thread 0 adds the squares of a row in order; then
// every thread scales its elements.
template <int H, int B>
__device__ void task_rms_norm(const TaskDesc& d, TaskCtx& c) {
  static_assert(H % 8 == 0, "rms_norm: H must be a multiple of 8");
  static_assert(RmsNormScratch<H>::kBytes <= kScratchBytes, "rms_norm: scratch too small");
  using Slot = slots::Norm;
  const bf16_t* x = dptr<const bf16_t>(d, Slot::kX);
  const bf16_t* w = dptr<const bf16_t>(d, Slot::kW);
  bf16_t* y = dptr<bf16_t>(d, Slot::kY);
  const float eps = arg_float(d, Slot::kEps);
  constexpr int kPer = (H + kThreads - 1) / kThreads;
  bf16_t* xs = reinterpret_cast<bf16_t*>(c.scratch);
  float* rs = reinterpret_cast<float*>(c.scratch + ((H * 2 + 15) / 16) * 16);
  float wv[kPer];  // this thread's weights, loaded together
#pragma unroll
  for (int j = 0; j < kPer; ++j) {
    const int i = threadIdx.x + j * kThreads;
    wv[j] = i < H ? bf16_to_f32(ld_const_bf16(&w[i])) : 0.f;
  }
#pragma unroll 1
  for (int b = 0; b < B; ++b) {
#pragma unroll
    for (int i = threadIdx.x; i < H / 8; i += kThreads)
      reinterpret_cast<uint4*>(xs)[i] = ld_cg_v4(x + static_cast<int64_t>(b) * H + i * 8);
    body_sync();
    if (threadIdx.x < 32) {  // one warp, in the canonical reduction order
      const float ss = warp_sum_squares<H>(xs, threadIdx.x);
      if (threadIdx.x == 0) *rs = rms_scale(ss, H, eps);
    }
    body_sync();
    const float r = *rs;
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
      const int i = threadIdx.x + j * kThreads;
      if (i < H) y[static_cast<int64_t>(b) * H + i] = f32_to_bf16(__fmul_rn(__fmul_rn(bf16_to_f32(xs[i]), r), wv[j]));
    }
    body_sync();
  }
}

// slots::Norm: NH whole heads of HD; rows of STRIDE. One thread per (row, head) adds
// that head's squares in order.
template <int HD, int NH, int B, int STRIDE>
__device__ void task_qk_norm(const TaskDesc& d, TaskCtx& c) {
  static_assert(HD % 8 == 0, "qk_norm: head_dim must be a multiple of 8");
  using Slot = slots::Norm;
  const bf16_t* x = dptr<const bf16_t>(d, Slot::kX);
  const bf16_t* w = dptr<const bf16_t>(d, Slot::kW);
  bf16_t* y = dptr<bf16_t>(d, Slot::kY);
  const float eps = arg_float(d, Slot::kEps);
  for (int u = threadIdx.x; u < B * NH; u += kThreads) {
    const int b = u / NH, h = u % NH;
    const int64_t base = static_cast<int64_t>(b) * STRIDE + h * HD;
    uint4 xv[HD / 8];  // the head, loaded at once (y may alias x)
#pragma unroll
    for (int i = 0; i < HD / 8; ++i) xv[i] = ld_cg_v4(x + base + i * 8);
    const float r = head_rms_scale<HD>([&](int i) { return bf16_at(xv[i / 8], i % 8); }, eps);
#pragma unroll
    for (int i = 0; i < HD / 8; ++i) {
      float f[8], wf[8];
      unpack8(xv[i], f);
      unpack8(__ldg(reinterpret_cast<const uint4*>(w + i * 8)), wf);
      uint32_t out[4];
#pragma unroll
      for (int e = 0; e < 8; e += 2)
        out[e / 2] = static_cast<uint32_t>(f32_to_bf16(normed(f[e], r, wf[e]))) |
                     (static_cast<uint32_t>(f32_to_bf16(normed(f[e + 1], r, wf[e + 1]))) << 16);
      *reinterpret_cast<uint4*>(y + base + i * 8) = make_uint4(out[0], out[1], out[2], out[3]);
    }
  }
}

}  // namespace dev
}  // namespace mpk
