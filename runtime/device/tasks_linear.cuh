// Matrix-vector task bodies (linear and lm_head): y[0:B, n0:n0+ROWS] = x[0:B, 0:K] W^T,
// each output the f32 sum over k ascending from 0, exactly as the CPU executor adds
// (docs/ir.md). A bf16 x bf16 product is exact in f32, so one fused multiply-add per k
// rounds exactly like the CPU's multiply-then-add. One thread owns one row (its chain
// of K dependent adds); W's rows stream through the weight stream in boxes of 64
// columns, swizzled so that the threads' reads of their own rows are conflict-free; x
// sits in shared memory (f32 when it fits, else bf16; both exact) and every thread
// reads the same x vector (a broadcast). Batch 1..8: B chains per thread.
//
// task_linear_group runs several linear tasks that read the same x (e.g. q_proj and
// k_proj on one worker) as one: each member's rows go to their own threads, the chunks
// hold every member's boxes for the same columns, and all chains advance together.
#pragma once

#include <cstdint>

#include "runtime/device/common.cuh"
#include "runtime/device/context.cuh"
#include "runtime/device/stream.cuh"
#include "runtime/device/tasks_elementwise.cuh"

namespace mpk {
namespace dev {

template <int K, int B, bool X_F32>
struct LinearScratch {
  static constexpr int kBytes = ((B * K * (X_F32 ? 4 : 2) + 15) / 16) * 16;
};

// x[0:B, 0:K] into shared memory, converted to f32 when X_F32.
template <int K, int B, bool X_F32>
__device__ __forceinline__ void load_x(const bf16_t* x, unsigned char* scratch) {
  const uint4* src = reinterpret_cast<const uint4*>(x);
  if constexpr (X_F32) {
    float4* dst = reinterpret_cast<float4*>(scratch);
    #pragma unroll 4
    for (int i = threadIdx.x; i < B * K / 8; i += kThreads) {
      float f[8];
      unpack8(ld_cg_v4(src + i), f);
      dst[2 * i] = make_float4(f[0], f[1], f[2], f[3]);
      dst[2 * i + 1] = make_float4(f[4], f[5], f[6], f[7]);
    }
  } else {
    uint4* dst = reinterpret_cast<uint4*>(scratch);
    #pragma unroll 4
    for (int i = threadIdx.x; i < B * K / 8; i += kThreads) dst[i] = ld_cg_v4(src + i);
  }
}

// The 8 x values of batch row b at column k (a multiple of 8).
template <int K, bool X_F32>
__device__ __forceinline__ void x8(const unsigned char* xs, int b, int k, float (&f)[8]) {
  if constexpr (X_F32) {
    const float4* p = reinterpret_cast<const float4*>(xs) + (b * K + k) / 4;
    const float4 a = p[0], c = p[1];
    f[0] = a.x; f[1] = a.y; f[2] = a.z; f[3] = a.w;
    f[4] = c.x; f[5] = c.y; f[6] = c.z; f[7] = c.w;
  } else {
    unpack8(*reinterpret_cast<const uint4*>(xs + (b * K + k) * 2), f);
  }
}

// Adds the nboxes boxes (row r of each, box_bytes apart, starting at column k0) to the
// chains acc[0:B], in column order.
template <int K, int B, bool X_F32>
__device__ __forceinline__ void accumulate_boxes(const unsigned char* chunk, int box_bytes, int nboxes,
                                                 int r, int k0, const unsigned char* xs, float (&acc)[B]) {
#pragma unroll 1
  for (int bx = 0; bx < nboxes; ++bx) {
    const unsigned char* box = chunk + bx * box_bytes;
    uint4 wv[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) wv[j] = *swizzled_vec(box, r, j);
    const int k = k0 + bx * kBoxCols;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      float wf[8];
      unpack8(wv[j], wf);
#pragma unroll
      for (int b = 0; b < B; ++b) {
        float xf[8];
        x8<K, X_F32>(xs, b, k + j * 8, xf);
#pragma unroll
        for (int e = 0; e < 8; ++e) acc[b] = fmaf(xf[e], wf[e], acc[b]);
      }
    }
  }
}

// ptr0: x [B, K]; ptr1: y + n0 (rows of YSTRIDE, bf16, or f32 when F32_OUT); stream:
// W[n0:n0+ROWS, 0:K] in row groups of BOX_ROWS. arg0: n0 (for the logits history).
template <int K, int ROWS, int B, int YSTRIDE, bool F32_OUT, int BOX_ROWS, int BOXES, bool X_F32>
__device__ void task_linear(const TaskDesc& d, TaskCtx& c) {
  static_assert(K % kBoxCols == 0, "linear: K must be a multiple of 64");
  static_assert(BOX_ROWS % 8 == 0 && BOX_ROWS <= 256 && BOX_ROWS <= kThreads - 32,
                "linear: bad box rows (the last warp produces the stream)");
  static_assert(BOX_ROWS * 128 * BOXES <= kSlotBytes, "linear: chunk larger than a stream slot");
  static_assert(LinearScratch<K, B, X_F32>::kBytes <= kScratchBytes, "linear: scratch too small");
  constexpr int kGroups = (ROWS + BOX_ROWS - 1) / BOX_ROWS;
  constexpr int kBoxesPerRow = K / kBoxCols;
  constexpr int kColChunks = (kBoxesPerRow + BOXES - 1) / BOXES;

  load_x<K, B, X_F32>(dptr<const bf16_t>(d, 0), c.scratch);
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
      if (r < rows) accumulate_boxes<K, B, X_F32>(w, box_bytes, nboxes, r, ch * BOXES * kBoxCols, c.scratch, acc);
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

// Up to four linear tasks over the same x [B, K], each a single row group (R rows,
// output rows of Y), run as one. The leader's descriptor d lists the other members in
// arg[1..3] and their number plus one in arg[4]; each member's own descriptor holds its
// y pointer (ptr1) and stream fields. A chunk holds, member after member, each member's
// boxes for the same columns.
template <int K, int B, int BOXES, bool X_F32, int R0, int Y0, int R1, int Y1, int R2, int Y2, int R3, int Y3>
__device__ void task_linear_group(const TaskDesc& d, TaskCtx& c) {
  constexpr int kPad[4] = {(R0 + 7) / 8 * 8, (R1 + 7) / 8 * 8, (R2 + 7) / 8 * 8, (R3 + 7) / 8 * 8};
  constexpr int kFirst[4] = {0, R0, R0 + R1, R0 + R1 + R2};  // first thread of each member
  constexpr int kPadRows = kPad[0] + kPad[1] + kPad[2] + kPad[3];
  constexpr int kBoxesPerRow = K / kBoxCols;
  constexpr int kColChunks = (kBoxesPerRow + BOXES - 1) / BOXES;
  static_assert(K % kBoxCols == 0, "linear: K must be a multiple of 64");
  static_assert(R0 + R1 + R2 + R3 <= kThreads - 32, "linear group: too many rows");
  static_assert(kPadRows * 128 * BOXES <= kSlotBytes, "linear group: chunk larger than a stream slot");
  static_assert(LinearScratch<K, B, X_F32>::kBytes <= kScratchBytes, "linear: scratch too small");

  load_x<K, B, X_F32>(dptr<const bf16_t>(d, 0), c.scratch);
  __syncthreads();
  // This thread's member m, its row r, and the padded rows of the members before it.
  const int t = threadIdx.x;
  const int m = t < kFirst[1] ? 0 : t < kFirst[2] ? 1 : t < kFirst[3] ? 2 : 3;
  const int r = t - (m == 0 ? 0 : m == 1 ? kFirst[1] : m == 2 ? kFirst[2] : kFirst[3]);
  const int rows = m == 0 ? R0 : m == 1 ? R1 : m == 2 ? R2 : R3;
  const int pad = m == 0 ? kPad[0] : m == 1 ? kPad[1] : m == 2 ? kPad[2] : kPad[3];
  const int before = m == 0 ? 0 : m == 1 ? kPad[0] : m == 2 ? kPad[0] + kPad[1] : kPad[0] + kPad[1] + kPad[2];
  const bool active = r < rows;

  float acc[B];
#pragma unroll
  for (int b = 0; b < B; ++b) acc[b] = 0.f;
#pragma unroll 1
  for (int ch = 0; ch < kColChunks; ++ch) {
    const unsigned char* w = c.next_chunk();
    const int nboxes = ch == kColChunks - 1 ? kBoxesPerRow - ch * BOXES : BOXES;
    if (active)
      accumulate_boxes<K, B, X_F32>(w + before * 128 * nboxes, pad * 128, nboxes, r, ch * BOXES * kBoxCols,
                                    c.scratch, acc);
    c.done_chunk();
  }
  if (active) {
    const TaskDesc& md = m == 0 ? d : c.params->tasks[d.arg[m]];
    const int ystride = m == 0 ? Y0 : m == 1 ? Y1 : m == 2 ? Y2 : Y3;
    bf16_t* y = dptr<bf16_t>(md, 1);
#pragma unroll
    for (int b = 0; b < B; ++b) y[static_cast<int64_t>(b) * ystride + r] = f32_to_bf16(acc[b]);
  }
}

}  // namespace dev
}  // namespace mpk
