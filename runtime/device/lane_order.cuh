// The canonical order of long f32 reductions on the device, the same as the CPU's
// runtime/cpu/lane_order.h (read its comment): 32 lanes, lane l keeps 8 accumulators for
// elements k = 256c + 8l + j (c ascending); each lane sums its 8 left to right; the
// lanes combine by a butterfly over offsets 16, 8, 4, 2, 1. A warp computes it natively
// (lane l reads 16 bytes per 256-element stripe); one thread computes it for n <= 256.
#pragma once

#include "runtime/device/common.cuh"

namespace mpk {
namespace dev {

// Lane's accumulators summed left to right, then the butterfly; every lane gets the sum.
__device__ __forceinline__ float warp_lane_finish(const float (&acc)[8]) {
  float s = acc[0];
#pragma unroll
  for (int j = 1; j < 8; ++j) s = __fadd_rn(s, acc[j]);
#pragma unroll
  for (int off = 16; off >= 1; off >>= 1) s = __fadd_rn(s, __shfl_xor_sync(0xffffffffu, s, off));
  return s;
}

// The 8 consecutive values at x as f32 (16 bytes of bf16, or 32 of f32).
__device__ __forceinline__ void load8(const bf16_t* x, float (&f)[8]) {
  unpack8(*reinterpret_cast<const uint4*>(x), f);
}
__device__ __forceinline__ void load8(const float* x, float (&f)[8]) {
  const float4 a = *reinterpret_cast<const float4*>(x), b = *reinterpret_cast<const float4*>(x + 4);
  f[0] = a.x; f[1] = a.y; f[2] = a.z; f[3] = a.w;
  f[4] = b.x; f[5] = b.y; f[6] = b.z; f[7] = b.w;
}

// Sum of squares of N values by one warp, in the canonical order; load(k, f) puts the 8
// values from k (a multiple of 8), each exactly a bf16, into f.
template <int N, class Load8>
__device__ __forceinline__ float warp_sum_squares_by(Load8 load, int lane) {
  static_assert(N % 8 == 0, "warp_sum_squares: N must be a multiple of 8");
  float acc[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
#pragma unroll 4
  for (int k = lane * 8; k < N; k += 256) {
    float f[8];
    load(k, f);
#pragma unroll
    for (int e = 0; e < 8; ++e) acc[e] = fmaf(f[e], f[e], acc[e]);
  }
  return warp_lane_finish(acc);
}

// The same over N values in memory this thread may read plainly (bf16, or f32 that are
// each exactly a bf16; 16-byte aligned).
template <int N, class T>
__device__ __forceinline__ float warp_sum_squares(const T* x, int lane) {
  return warp_sum_squares_by<N>([&](int k, float (&f)[8]) { load8(x + k, f); }, lane);
}

// One thread, n = 8 * L <= 256 terms: lanes[l] holds lane l's sum (terms 8l..8l+7 added
// left to right); the butterfly over the 32 lanes (lanes past L are +0) leaves lane 0.
// Only the first L lanes are kept (those past L stay +0, and adding one still rounds a
// -0 to +0, as the butterfly does): an array of 32 had been put in local memory.
template <int L>
__device__ __forceinline__ float thread_lane_tree(float (&lanes)[L]) {
  static_assert(L >= 1 && L <= 32, "thread_lane_tree: at most 32 lanes");
  float v[L];
#pragma unroll
  for (int l = 0; l < L; ++l) v[l] = lanes[l];
#pragma unroll
  for (int off = 16; off >= 1; off >>= 1)
#pragma unroll
    for (int l = 0; l < (off < L ? off : L); ++l) v[l] = __fadd_rn(v[l], l + off < L ? v[l + off] : 0.f);
  return v[0];
}

}  // namespace dev
}  // namespace mpk
