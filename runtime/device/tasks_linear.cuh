// Matrix-vector task bodies (linear and lm_head): y[0:B, n0:n0+ROWS] = x[0:B, 0:K] W^T
// with W's rows n0.. streamed through the weight stream in chunks of RPC rows (the
// codegen chooses RPC and fills the descriptor's stream fields to match). x is copied
// once into shared memory as bf16 (exact). Batch 1..8 on CUDA cores, f32 accumulation.
//
// Within a chunk, when RPC >= kWarps each warp owns whole rows; otherwise each row is
// split over kWarps/RPC warps (RPC a power of two) whose partial sums are added in warp
// order. Lanes read consecutive 16-byte vectors of the row (bank-conflict free).
#pragma once

#include <cstdint>

#include "runtime/device/common.cuh"
#include "runtime/device/context.cuh"
#include "runtime/device/tasks_elementwise.cuh"

namespace mpk {
namespace dev {

template <int K, int B>
struct LinearScratch {
  static constexpr int kXBytes = ((B * K * 2 + 15) / 16) * 16;
  static constexpr int kBytes = kXBytes + kWarps * B * 4;
};

// Copies x[0:B, 0:K] (bf16, contiguous) into shared memory with 16-byte L2 loads.
template <int K, int B>
__device__ __forceinline__ void load_x(const bf16_t* x, bf16_t* xs) {
  constexpr int kVecs = B * K / 8;
  const uint4* src = reinterpret_cast<const uint4*>(x);
  uint4* dst = reinterpret_cast<uint4*>(xs);
  for (int i = threadIdx.x; i < kVecs; i += kThreads) dst[i] = ld_cg_v4(src + i);
}

// Dot products of `lane`'s share of one row (vectors v0, v0 + vstep, ...) with x.
template <int K, int B, int VSTART_STRIDE, int NV>
__device__ __forceinline__ void row_partial(const unsigned char* row, const bf16_t* xs, int v0,
                                            float (&acc)[B]) {
  constexpr int kVpr = K / 8;
#pragma unroll
  for (int j = 0; j < NV; ++j) {
    const int v = v0 + j * VSTART_STRIDE;
    if (kVpr % VSTART_STRIDE == 0 || v < kVpr) {
      const uint4 wv = *reinterpret_cast<const uint4*>(row + v * 16);
      float w[8];
      unpack8(wv, w);
#pragma unroll
      for (int b = 0; b < B; ++b) {
        const uint4 xv = *reinterpret_cast<const uint4*>(xs + b * K + v * 8);
        float xf[8];
        unpack8(xv, xf);
#pragma unroll
        for (int e = 0; e < 8; ++e) acc[b] = fmaf(w[e], xf[e], acc[b]);
      }
    }
  }
}

// ptr0: x [B, K]; ptr1: y + n0 (rows of YSTRIDE, bf16, or f32 when F32_OUT); stream:
// W[n0:n0+ROWS, 0:K]. arg0: n0 (for the logits history of lm_head).
template <int K, int ROWS, int RPC, int B, int YSTRIDE, bool F32_OUT>
__device__ void task_linear(const TaskDesc& d, TaskCtx& c) {
  static_assert(K % 8 == 0, "linear: K must be a multiple of 8");
  static_assert(RPC >= 1 && RPC * K * 2 <= kSlotBytes, "linear: chunk larger than a stream slot");
  static_assert(RPC >= kWarps || (kWarps % RPC == 0), "linear: RPC must divide the warp count");
  static_assert(LinearScratch<K, B>::kBytes <= kScratchBytes, "linear: scratch too small");
  constexpr int kVpr = K / 8;
  constexpr int kChunks = (ROWS + RPC - 1) / RPC;
  constexpr int kWpr = RPC >= kWarps ? 1 : kWarps / RPC;  // warps per row
  constexpr int kStride = 32 * kWpr;                       // vector stride within a row
  constexpr int kNv = (kVpr + kStride - 1) / kStride;      // vectors per lane per row

  const bf16_t* x = dptr<const bf16_t>(d, 0);
  bf16_t* xs = reinterpret_cast<bf16_t*>(c.scratch);
  float* red = reinterpret_cast<float*>(c.scratch + LinearScratch<K, B>::kXBytes);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  load_x<K, B>(x, xs);
  __syncthreads();

  const KernelParams& p = *c.params;
  float* hist = (F32_OUT && p.logits_history != nullptr)
                    ? p.logits_history + static_cast<int64_t>(c.step) * B * p.vocab + d.arg[0]
                    : nullptr;
  auto store = [&](int b, int n, float v) {
    if constexpr (F32_OUT) {
      dptr<float>(d, 1)[static_cast<int64_t>(b) * YSTRIDE + n] = v;
      if (hist != nullptr) hist[static_cast<int64_t>(b) * p.vocab + n] = v;
    } else {
      dptr<bf16_t>(d, 1)[static_cast<int64_t>(b) * YSTRIDE + n] = f32_to_bf16(v);
    }
  };

#pragma unroll 1
  for (int ch = 0; ch < kChunks; ++ch) {
    const int rows = ch == kChunks - 1 ? ROWS - ch * RPC : RPC;
    const unsigned char* w = c.next_chunk();
    if constexpr (kWpr == 1) {
#pragma unroll 1
      for (int r = warp; r < rows; r += kWarps) {
        float acc[B];
#pragma unroll
        for (int b = 0; b < B; ++b) acc[b] = 0.f;
        row_partial<K, B, kStride, kNv>(w + static_cast<size_t>(r) * K * 2, xs, lane, acc);
#pragma unroll
        for (int b = 0; b < B; ++b) acc[b] = warp_sum(acc[b]);
        if (lane == 0) {
#pragma unroll
          for (int b = 0; b < B; ++b) store(b, ch * RPC + r, acc[b]);
        }
      }
    } else {
      const int r = warp / kWpr, part = warp % kWpr;
      if (r < rows) {
        float acc[B];
#pragma unroll
        for (int b = 0; b < B; ++b) acc[b] = 0.f;
        row_partial<K, B, kStride, kNv>(w + static_cast<size_t>(r) * K * 2, xs, part * 32 + lane, acc);
#pragma unroll
        for (int b = 0; b < B; ++b) acc[b] = warp_sum(acc[b]);
        if (lane == 0) {
#pragma unroll
          for (int b = 0; b < B; ++b) red[(r * kWpr + part) * B + b] = acc[b];
        }
      }
      __syncthreads();
      if (threadIdx.x < rows * B) {
        const int rr = threadIdx.x / B, b = threadIdx.x % B;
        float s = 0.f;
#pragma unroll
        for (int q = 0; q < kWpr; ++q) s += red[(rr * kWpr + q) * B + b];
        store(b, ch * RPC + rr, s);
      }
    }
    c.done_chunk();
  }
}

}  // namespace dev
}  // namespace mpk
