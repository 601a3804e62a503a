// Matrix-vector task bodies (linear and lm_head): y[0:B, n0:n0+ROWS] = x[0:B, 0:K] W^T,
// each output the f32 sum over k ascending from 0, exactly as the CPU executor adds
// (docs/ir.md). A bf16 x bf16 product is exact in f32, so one fused multiply-add per k
// rounds exactly like the CPU's multiply-then-add. One thread owns one row (its chain
// of K dependent adds); W's rows stream through the weight stream in groups of
// BOX_ROWS rows and chunks of BOXES x 64 columns, swizzled so that the threads' reads
// of their own rows are conflict-free; x sits in shared memory as bf16 (exact) and
// every thread reads the same x vector (a broadcast). Batch 1..8: B chains per thread.
#pragma once

#include <cstdint>

#include "runtime/device/common.cuh"
#include "runtime/device/context.cuh"
#include "runtime/device/stream.cuh"
#include "runtime/device/tasks_elementwise.cuh"

namespace mpk {
namespace dev {

template <int K, int B>
struct LinearScratch {
  static constexpr int kBytes = ((B * K * 2 + 15) / 16) * 16;
};

// ptr0: x [B, K]; ptr1: y + n0 (rows of YSTRIDE, bf16, or f32 when F32_OUT); stream:
// W[n0:n0+ROWS, 0:K]. arg0: n0 (for the logits history of lm_head).
template <int K, int ROWS, int B, int YSTRIDE, bool F32_OUT, int BOX_ROWS, int BOXES>
__device__ void task_linear(const TaskDesc& d, TaskCtx& c) {
  static_assert(K % kBoxCols == 0, "linear: K must be a multiple of 64");
  static_assert(BOX_ROWS % 8 == 0 && BOX_ROWS <= 256 && BOX_ROWS <= kThreads - 32,
                "linear: bad box rows (the last warp produces the stream)");
  static_assert(BOX_ROWS * 128 * BOXES <= kSlotBytes, "linear: chunk larger than a stream slot");
  static_assert(LinearScratch<K, B>::kBytes <= kScratchBytes, "linear: scratch too small");
  constexpr int kGroups = (ROWS + BOX_ROWS - 1) / BOX_ROWS;
  constexpr int kBoxesPerRow = K / kBoxCols;
  constexpr int kColChunks = (kBoxesPerRow + BOXES - 1) / BOXES;

  bf16_t* xs = reinterpret_cast<bf16_t*>(c.scratch);
  {
    const uint4* src = reinterpret_cast<const uint4*>(dptr<const bf16_t>(d, 0));
    uint4* dst = reinterpret_cast<uint4*>(xs);
    for (int i = threadIdx.x; i < B * K / 8; i += kThreads) dst[i] = ld_cg_v4(src + i);
  }
  __syncthreads();

  const KernelParams& p = *c.params;
  float* hist = (F32_OUT && p.logits_history != nullptr)
                    ? p.logits_history + static_cast<int64_t>(c.step) * B * p.vocab + d.arg[0]
                    : nullptr;
  const int r = threadIdx.x;
#pragma unroll 1
  for (int g = 0; g < kGroups; ++g) {
    const int rows = g == kGroups - 1 ? ROWS - g * BOX_ROWS : BOX_ROWS;
    const int box_bytes = ((rows + 7) / 8) * 8 * 128;  // the box's row count is padded to 8
    float acc[B];
#pragma unroll
    for (int b = 0; b < B; ++b) acc[b] = 0.f;
#pragma unroll 1
    for (int ch = 0; ch < kColChunks; ++ch) {
      const unsigned char* w = c.next_chunk();
      const int nboxes = ch == kColChunks - 1 ? kBoxesPerRow - ch * BOXES : BOXES;
      if (r < rows) {
#pragma unroll 1
        for (int bx = 0; bx < nboxes; ++bx) {
          const unsigned char* box = w + bx * box_bytes;
          const int k0 = (ch * BOXES + bx) * kBoxCols;
#pragma unroll
          for (int j = 0; j < 8; ++j) {
            float wf[8];
            unpack8(*swizzled_vec(box, r, j), wf);
#pragma unroll
            for (int b = 0; b < B; ++b) {
              float xf[8];
              unpack8(*reinterpret_cast<const uint4*>(xs + b * K + k0 + j * 8), xf);
#pragma unroll
              for (int e = 0; e < 8; ++e) acc[b] = fmaf(xf[e], wf[e], acc[b]);
            }
          }
        }
      }
      c.done_chunk();
    }
    if (r < rows) {
      const int n = g * BOX_ROWS + r;
#pragma unroll
      for (int b = 0; b < B; ++b) {
        if constexpr (F32_OUT) {
          dptr<float>(d, 1)[static_cast<int64_t>(b) * YSTRIDE + n] = acc[b];
          if (hist != nullptr) hist[static_cast<int64_t>(b) * p.vocab + n] = acc[b];
        } else {
          dptr<bf16_t>(d, 1)[static_cast<int64_t>(b) * YSTRIDE + n] = f32_to_bf16(acc[b]);
        }
      }
    }
  }
}

}  // namespace dev
}  // namespace mpk
