// Matrix-vector task bodies (linear and lm_head): y[0:B, n0:n0+ROWS] = x[0:B, 0:K] W^T,
// each output an f32 sum in the canonical reduction order (lane_order.cuh; the CPU
// executor adds in the same order, so results are bit-identical). A bf16 x bf16 product
// is exact in f32, so a fused multiply-add rounds like the CPU's multiply-then-add.
// One warp owns a row: lane l handles the 16-byte piece l % 8 of every box whose index
// is l / 8 mod 4, keeping 8 accumulators per (row, batch row). W's rows stream through
// the weight stream in boxes of 64 columns, swizzled so that a warp's reads of one row
// are conflict-free; x sits in shared memory (f32 when it fits, else bf16; both exact).
// Warp w owns rows w, w + kWarps, ... of a row group (RW of them), so the row groups
// that codegen chooses stay within max_linear_rows (runtime/device/abi.cuh). The
// descriptor's slots are slots::Linear (task_slots.cuh).
//
// task_linear_group runs several linear tasks that read the same x (e.g. q_proj and
// k_proj on one worker) as one: the members' rows are dealt to the warps in order, the
// chunks hold every member's boxes for the same columns, and all rows advance together.
//
// Above batch 1 every body runs its row groups on tensor cores instead
// (tensor_core_rows.cuh), in an order of its own that the CPU does not reproduce
// (docs/ir.md, "Exactness"); the epilogues are the same.
#pragma once

#include <cstdint>
#include <type_traits>

#include "runtime/device/common.cuh"
#include "runtime/device/context.cuh"
#include "runtime/device/lane_order.cuh"
#include "runtime/device/stream.cuh"
#include "runtime/device/tasks_argmax.cuh"
#include "runtime/device/tasks_binary.cuh"
#include "runtime/device/tensor_core_rows.cuh"

namespace mpk {
namespace dev {

// The element type of x in shared memory.
template <bool X_F32>
using XType = std::conditional_t<X_F32, float, bf16_t>;

template <int K, int B, bool X_F32>
struct LinearScratch {
  static constexpr int kBytes = ((B * K * (X_F32 ? 4 : 2) + 15) / 16) * 16;
};

// Eight values into shared memory at xs[i * 8] (f32 or bf16).
template <bool X_F32>
__device__ __forceinline__ void store8(unsigned char* xs, int i, const uint4& v) {
  if constexpr (X_F32) {
    float f[8];
    unpack8(v, f);
    float4* dst = reinterpret_cast<float4*>(xs) + 2 * i;
    dst[0] = make_float4(f[0], f[1], f[2], f[3]);
    dst[1] = make_float4(f[4], f[5], f[6], f[7]);
  } else {
    reinterpret_cast<uint4*>(xs)[i] = v;
  }
}

// x[0:B, 0:K] (kX) into shared memory, f32 when X_F32, else bf16 (both exact). With a
// fused rms_norm (EPS_BITS != 0: the f32 bits of eps; kNorm: the norm weight [K]) each
// row is replaced by its rms_norm rounded to bf16, summed and scaled exactly as
// task_rms_norm does. Every thread loads its 16-byte pieces of x and of the norm weight
// at once (one round trip); the raw rows go to a second buffer after x, from which every
// warp sums the squares in the canonical order itself, so the scaling needs no second
// barrier. The caller synchronizes the body threads before reading x.
template <int K, int B, bool X_F32, int EPS_BITS>
__device__ __forceinline__ void load_x_normed(const TaskDesc& d, unsigned char* scratch) {
  constexpr int kVecs = B * K / 8;
  constexpr int kPer = (kVecs + kThreads - 1) / kThreads;
  const uint4* x = dptr<const uint4>(d, slots::Linear::kX);
  uint4 xv[kPer];
#pragma unroll
  for (int j = 0; j < kPer; ++j) {
    const int i = threadIdx.x + j * kThreads;
    if (i < kVecs) xv[j] = ld_cg_v4(x + i);
  }
  if constexpr (EPS_BITS == 0) {
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
      const int i = threadIdx.x + j * kThreads;
      if (i < kVecs) store8<X_F32>(scratch, i, xv[j]);
    }
  } else {
    static_assert(LinearScratch<K, B, X_F32>::kBytes + B * K * 2 <= kScratchBytes, "linear: scratch too small");
    const uint4* w = dptr<const uint4>(d, slots::Linear::kNorm);
    uint4 wv[kPer];
    uint4* raw = reinterpret_cast<uint4*>(scratch + LinearScratch<K, B, X_F32>::kBytes);
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
      const int i = threadIdx.x + j * kThreads;
      if (i < kVecs) {
        wv[j] = __ldg(w + i % (K / 8));
        raw[i] = xv[j];
      }
    }
    body_sync();
    float r[B];
#pragma unroll
    for (int b = 0; b < B; ++b)
      r[b] = rms_scale(warp_sum_squares<K>(reinterpret_cast<const bf16_t*>(raw) + b * K, threadIdx.x & 31), K,
                       __int_as_float(EPS_BITS));
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
      const int i = threadIdx.x + j * kThreads;
      if (i >= kVecs) continue;
      float f[8], wf[8];
      unpack8(xv[j], f);
      unpack8(wv[j], wf);
      float rb = r[0];
#pragma unroll
      for (int b = 1; b < B; ++b)
        if (i / (K / 8) == b) rb = r[b];
      uint32_t out[4];
#pragma unroll
      for (int e = 0; e < 8; e += 2) {
        const bf16_t lo = f32_to_bf16(__fmul_rn(__fmul_rn(f[e], rb), wf[e]));
        const bf16_t hi = f32_to_bf16(__fmul_rn(__fmul_rn(f[e + 1], rb), wf[e + 1]));
        out[e / 2] = static_cast<uint32_t>(lo) | (static_cast<uint32_t>(hi) << 16);
      }
      store8<X_F32>(scratch, i, make_uint4(out[0], out[1], out[2], out[3]));
    }
  }
}

// The 8 x values of batch row b at column k (a multiple of 8).
template <int K, bool X_F32>
__device__ __forceinline__ void x8(const unsigned char* xs, int b, int k, float (&f)[8]) {
  load8(reinterpret_cast<const XType<X_F32>*>(xs) + b * K + k, f);
}

// One warp adds the boxes of a chunk to the accumulators of its rows, in the canonical
// order: lane l takes the boxes b with (first_box + b) % 4 == l / 8 (ascending) and
// their 16-byte piece l % 8. Row i of the warp is row row[i] (-1: none) of a box whose
// rows are pad[i] apart, in the member block starting before[i] padded rows in.
template <int K, int B, bool X_F32, int RW>
__device__ __forceinline__ void warp_accumulate(const unsigned char* chunk, int nboxes, int first_box,
                                                const int (&row)[RW], const int (&pad)[RW],
                                                const int (&before)[RW], int lane,
                                                const unsigned char* xs, float (&acc)[RW][B][8]) {
  const int sub = lane >> 3, j = lane & 7;
#pragma unroll 1
  for (int bx = (sub - first_box) & 3; bx < nboxes; bx += 4) {
    const int k = (first_box + bx) * kBoxCols + j * 8;
    float xf[B][8];
#pragma unroll
    for (int b = 0; b < B; ++b) x8<K, X_F32>(xs, b, k, xf[b]);
#pragma unroll
    for (int i = 0; i < RW; ++i) {
      if (row[i] < 0) continue;
      const unsigned char* box = chunk + (before[i] * nboxes + bx * pad[i]) * 128;
      float wf[8];
      unpack8(*swizzled_vec(box, row[i], j), wf);
#pragma unroll
      for (int b = 0; b < B; ++b)
#pragma unroll
        for (int e = 0; e < 8; ++e) acc[i][b][e] = fmaf(xf[b][e], wf[e], acc[i][b][e]);
    }
  }
}

// Every chunk of one row group (K columns in chunks of BOXES boxes) from the stream into
// the warp's freshly zeroed accumulators, the first chunk `first` (already acquired);
// each chunk is released after use.
template <int K, int B, int BOXES, bool X_F32, int RW>
__device__ __forceinline__ void accumulate_row_group(TaskCtx& c, const unsigned char* first, const int (&row)[RW],
                                                     const int (&pad)[RW], const int (&before)[RW], int lane,
                                                     float (&acc)[RW][B][8]) {
  constexpr int kBoxesPerRow = K / kBoxCols;
  constexpr int kColChunks = (kBoxesPerRow + BOXES - 1) / BOXES;
#pragma unroll
  for (int i = 0; i < RW; ++i)
#pragma unroll
    for (int b = 0; b < B; ++b)
#pragma unroll
      for (int e = 0; e < 8; ++e) acc[i][b][e] = 0.f;
#pragma unroll 1
  for (int ch = 0; ch < kColChunks; ++ch) {
    const unsigned char* w = ch == 0 ? first : c.next_chunk();
    const int nboxes = ch == kColChunks - 1 ? kBoxesPerRow - ch * BOXES : BOXES;
    warp_accumulate<K, B, X_F32, RW>(w, nboxes, ch * BOXES, row, pad, before, lane, c.scratch, acc);
    c.done_chunk();
  }
}

// Calls group(g, first) for every row group the task runs, `first` its first chunk
// (acquired): all of 0 .. GROUPS-1; or, for a cooperative share (UNIT_GROUPS > 0: row
// groups per unit), the row groups u * UNIT_GROUPS ... of each unit u the stream
// delivers (the tag of the unit's first chunk), until the slot that ends the share.
template <int GROUPS, int UNIT_GROUPS, class Group>
__device__ __forceinline__ void for_row_groups(TaskCtx& c, Group group) {
  if constexpr (UNIT_GROUPS == 0) {
#pragma unroll 1
    for (int g = 0; g < GROUPS; ++g) group(g, c.next_chunk());
  } else {
#pragma unroll 1
    while (true) {
      const unsigned char* first = c.next_chunk();
      const int u = c.stream->tag();
      if (u < 0) {
        c.done_chunk();
        return;
      }
#pragma unroll 1
      for (int k = 0; k < UNIT_GROUPS && u * UNIT_GROUPS + k < GROUPS; ++k)
        group(u * UNIT_GROUPS + k, k == 0 ? first : c.next_chunk());
    }
  }
}

// kX: x [B, K]; kY: y + n0 (rows of YSTRIDE, bf16, or f32 when F32_OUT); with
// RESIDUAL, kResidual: residual + n0 (bf16, rows of YSTRIDE), added to the bf16-rounded
// product in f32 (as linear then residual_add); with EPS_BITS, x is rms-normed first
// (load_x_normed); stream: W[n0:n0+ROWS, 0:K] in row groups of BOX_ROWS. kRow0: n0 (for
// the logits history). With NP > 0 (an lm_head fused with its argmax), also the largest
// value and its lowest index over the task's rows, as argmax_partial computes them, to
// kArgmaxVal / kArgmaxIdx: argmax_val + p, argmax_idx + p (rows of NP). A cooperative share
// (UNIT_GROUPS > 0; n0 = 0, ROWS the operator's) runs the row groups of the units it
// claims, and its argmax partial starts from (-inf, 0). With BIAS, kBias: bias + n0,
// added to the f32 sum before anything rounds it (as the CPU's linear_block).
template <int K, int ROWS, int B, int YSTRIDE, bool F32_OUT, int BOX_ROWS, int BOXES, bool X_F32, bool RESIDUAL,
          int EPS_BITS, int NP, int UNIT_GROUPS, bool BIAS = false>
__device__ void task_linear(const TaskDesc& d, TaskCtx& c) {
  static_assert(K % kBoxCols == 0, "linear: K must be a multiple of 64");
  static_assert(BOX_ROWS % 8 == 0 && BOX_ROWS <= 256, "linear: bad box rows");
  static_assert(BOX_ROWS * 128 * BOXES <= kSlotBytes, "linear: chunk larger than a stream slot");
  static_assert(B >= 2 || LinearScratch<K, B, X_F32>::kBytes <= kScratchBytes, "linear: scratch too small");
  static_assert(NP == 0 || F32_OUT, "linear: an argmax epilogue needs f32 logits");
  constexpr int kGroups = (ROWS + BOX_ROWS - 1) / BOX_ROWS;
  constexpr int RW = (BOX_ROWS + kWarps - 1) / kWarps;

  using Slot = slots::Linear;
  const KernelParams& p = *c.params;
  const int32_t n0 = arg_int(d, Slot::kRow0);
  float* hist = (F32_OUT && p.logits_history != nullptr)
                    ? p.logits_history + static_cast<int64_t>(c.step) * B * p.vocab + n0
                    : nullptr;
  float best[B];  // the argmax epilogue: this thread's best (value, index) per batch row
  int32_t best_i[B];
#pragma unroll
  for (int b = 0; b < B; ++b) {
    best[b] = -INFINITY;
    best_i[b] = n0;
  }
  const auto bias = [&](int n) { return BIAS ? bf16_to_f32(ld_const_bf16(dptr<const bf16_t>(d, Slot::kBias) + n)) : 0.f; };
  const auto residual = [&](int n, int b) {
    return bf16_to_f32(ld_cg_bf16(dptr<const bf16_t>(d, Slot::kResidual) + static_cast<int64_t>(b) * YSTRIDE + n));
  };
  // Row n's output for batch row b: v its f32 sum (with the bias), res its residual.
  const auto store = [&](int n, int b, float v, float res) {
    const int64_t at = static_cast<int64_t>(b) * YSTRIDE + n;
    if constexpr (F32_OUT) {
      dptr<float>(d, Slot::kY)[at] = v;
      if (hist != nullptr) hist[static_cast<int64_t>(b) * p.vocab + n] = v;
    } else if constexpr (RESIDUAL) {
      dptr<bf16_t>(d, Slot::kY)[at] = f32_to_bf16(bf16_to_f32(f32_to_bf16(v)) + res);
    } else {
      dptr<bf16_t>(d, Slot::kY)[at] = f32_to_bf16(v);
    }
  };
  unsigned char* red;  // the argmax epilogue's block reduction
  if constexpr (B >= 2) {
    using Tc = TcRowGroups<K, B, BOXES, EPS_BITS, BOX_ROWS>;
    red = c.scratch + Tc::kAt.red;
    Tc tc(d, c);
    for_row_groups<kGroups, UNIT_GROUPS>(c, [&](int g, const unsigned char* first) {
      const int rows = g == kGroups - 1 ? ROWS - g * BOX_ROWS : BOX_ROWS;
      const float* sums = tc.run(first, TcRows{{rows, 0, 0, 0}, {(rows + 7) / 8 * 8, 0, 0, 0}});
      for (int u = threadIdx.x; u < rows * B; u += kThreads) {
        const int b = u % B, n = g * BOX_ROWS + u / B;
        const float v = BIAS ? __fadd_rn(sums[u], bias(n)) : sums[u];
        if constexpr (NP > 0) {
#pragma unroll
          for (int k = 0; k < B; ++k)
            if (k == b) argmax_combine(best[k], best_i[k], v, n0 + n);
        }
        store(n, b, v, RESIDUAL ? residual(n, b) : 0.f);
      }
    });
  } else {
    red = c.scratch + LinearScratch<K, B, X_F32>::kBytes + (EPS_BITS != 0 ? B * K * 2 : 0);
    load_x_normed<K, B, X_F32, EPS_BITS>(d, c.scratch);
    body_sync();
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    for_row_groups<kGroups, UNIT_GROUPS>(c, [&](int g, const unsigned char* first) {
      const int rows = g == kGroups - 1 ? ROWS - g * BOX_ROWS : BOX_ROWS;
      const int padded = (rows + 7) / 8 * 8;  // the box's row count is padded to 8
      int row[RW], pad[RW], before[RW];
#pragma unroll
      for (int i = 0; i < RW; ++i) {
        const int r = warp + i * kWarps;
        row[i] = r < rows ? r : -1;
        pad[i] = padded;
        before[i] = 0;
      }
      // The residual of this warp's rows, requested before the chunks are consumed.
      float res[RESIDUAL ? RW : 1][B];
      if constexpr (RESIDUAL) {
#pragma unroll
        for (int i = 0; i < RW; ++i)
#pragma unroll
          for (int b = 0; b < B; ++b) res[i][b] = row[i] >= 0 && lane == 0 ? residual(g * BOX_ROWS + row[i], b) : 0.f;
      }
      float acc[RW][B][8];
      accumulate_row_group<K, B, BOXES, X_F32, RW>(c, first, row, pad, before, lane, acc);
#pragma unroll
      for (int i = 0; i < RW; ++i) {
        if (row[i] < 0) continue;
        const int n = g * BOX_ROWS + row[i];
#pragma unroll
        for (int b = 0; b < B; ++b) {
          const float v = BIAS ? __fadd_rn(warp_lane_finish(acc[i][b]), bias(n)) : warp_lane_finish(acc[i][b]);
          if constexpr (NP > 0) argmax_combine(best[b], best_i[b], v, n0 + n);
          if (lane == 0) store(n, b, v, RESIDUAL ? res[i][b] : 0.f);
        }
      }
    });
  }
  if constexpr (NP > 0) {
#pragma unroll 1
    for (int b = 0; b < B; ++b) {
      block_argmax(best[b], best_i[b], red);
      if (threadIdx.x == 0) {
        dptr<float>(d, Slot::kArgmaxVal)[b * NP] = best[b];
        dptr<int32_t>(d, Slot::kArgmaxIdx)[b * NP] = best_i[b];
      }
    }
  }
}

// A linear with a SwiGLU epilogue (fuse-swiglu): y[0:B, n0:n0+ROWS] = silu(g) * u with
// g = round_bf16(x Wg^T) and u = round_bf16(x Wu^T) over the same rows, exactly as
// linear, linear, silu_mul. The stream holds each row group's gate rows then its up rows
// for the same columns (a chunk of 2 x BOX_ROWS rows); the warps' rows are dealt over
// both; the rounded sums meet in shared memory (two buffers, alternating), where the
// body threads apply the activation. Slots as task_linear's: x, y + n0 (rows of
// YSTRIDE), the norm weight with EPS_BITS. UNIT_GROUPS > 0: a cooperative share, as
// task_linear.
template <int K, int ROWS, int B, int YSTRIDE, int BOX_ROWS, int BOXES, bool X_F32, int EPS_BITS, int UNIT_GROUPS>
__device__ void task_linear_swiglu(const TaskDesc& d, TaskCtx& c) {
  static_assert(K % kBoxCols == 0, "linear: K must be a multiple of 64");
  static_assert(BOX_ROWS % 8 == 0, "linear: bad box rows");
  static_assert(2 * BOX_ROWS * 128 * BOXES <= kSlotBytes, "swiglu: chunk larger than a stream slot");
  constexpr int kGroups = (ROWS + BOX_ROWS - 1) / BOX_ROWS;
  bf16_t* y = dptr<bf16_t>(d, slots::Linear::kY);
  // Row r of the row group at g, batch row b, from its rounded gate and up sums.
  const auto store = [&](int g, int r, int b, float gate, float up) {
    y[static_cast<int64_t>(b) * YSTRIDE + g * BOX_ROWS + r] = f32_to_bf16(silu_mul(gate, up));
  };
  if constexpr (B >= 2) {
    TcRowGroups<K, B, BOXES, EPS_BITS, 2 * BOX_ROWS> tc(d, c);
    for_row_groups<kGroups, UNIT_GROUPS>(c, [&](int g, const unsigned char* first) {
      const int rows = g == kGroups - 1 ? ROWS - g * BOX_ROWS : BOX_ROWS;
      const int padded = (rows + 7) / 8 * 8;
      const float* sums = tc.run(first, TcRows{{rows, rows, 0, 0}, {padded, padded, 0, 0}});
      for (int u = threadIdx.x; u < rows * B; u += kThreads)
        store(g, u / B, u % B, bf16_to_f32(f32_to_bf16(sums[u])), bf16_to_f32(f32_to_bf16(sums[padded * B + u])));
    });
  } else {
    constexpr int RW = (2 * BOX_ROWS + kWarps - 1) / kWarps;
    constexpr int kX = LinearScratch<K, B, X_F32>::kBytes + (EPS_BITS != 0 ? B * K * 2 : 0);
    static_assert(kX + 2 * 2 * B * BOX_ROWS * 4 <= kScratchBytes, "swiglu: scratch too small");
    load_x_normed<K, B, X_F32, EPS_BITS>(d, c.scratch);
    body_sync();
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    // The exchange buffer alternates per row group run (a cooperative share's row groups
    // are not consecutive), so that a group's writes never meet the previous one's reads.
    int buffer = 0;
    for_row_groups<kGroups, UNIT_GROUPS>(c, [&](int g, const unsigned char* first) {
      float* gu = reinterpret_cast<float*>(c.scratch + kX) + (buffer ^= 1) * 2 * B * BOX_ROWS;  // [2][B][BOX_ROWS]
      const int rows = g == kGroups - 1 ? ROWS - g * BOX_ROWS : BOX_ROWS;
      const int padded = (rows + 7) / 8 * 8;
      int row[RW], pad[RW], before[RW], part[RW];
#pragma unroll
      for (int i = 0; i < RW; ++i) {
        const int q = warp + i * kWarps;
        part[i] = q >= rows ? 1 : 0;
        row[i] = q < 2 * rows ? q - part[i] * rows : -1;
        pad[i] = padded;
        before[i] = part[i] * padded;
      }
      float acc[RW][B][8];
      accumulate_row_group<K, B, BOXES, X_F32, RW>(c, first, row, pad, before, lane, acc);
#pragma unroll
      for (int i = 0; i < RW; ++i) {
        if (row[i] < 0) continue;
#pragma unroll
        for (int b = 0; b < B; ++b) {
          const float v = warp_lane_finish(acc[i][b]);
          if (lane == 0) gu[(part[i] * B + b) * BOX_ROWS + row[i]] = bf16_to_f32(f32_to_bf16(v));
        }
      }
      body_sync();
      for (int u = threadIdx.x; u < B * rows; u += kThreads) {
        const int b = u / rows, r = u % rows;
        store(g, r, b, gu[b * BOX_ROWS + r], gu[(B + b) * BOX_ROWS + r]);
      }
    });
  }
}

// Up to four linear tasks over the same x [B, K] (and the same fused norm, if any), each
// a single row group (R rows, output rows of Y), run as one. Member m writes its y at
// slots::Linear::group_y(m) of the group's descriptor (with BIAS, every member adds its
// bias at group_bias(m), as task_linear). A chunk holds, member after member, each
// member's boxes for the same columns.
template <int K, int B, int BOXES, bool X_F32, int EPS_BITS, int R0, int Y0, int R1, int Y1, int R2, int Y2, int R3,
          int Y3, bool BIAS = false>
__device__ void task_linear_group(const TaskDesc& d, TaskCtx& c) {
  constexpr int kPad[4] = {(R0 + 7) / 8 * 8, (R1 + 7) / 8 * 8, (R2 + 7) / 8 * 8, (R3 + 7) / 8 * 8};
  constexpr int kRows[4] = {R0, R1, R2, R3};
  constexpr int kYStride[4] = {Y0, Y1, Y2, Y3};
  constexpr int kTotal = R0 + R1 + R2 + R3;
  constexpr int kPadRows = kPad[0] + kPad[1] + kPad[2] + kPad[3];
  static_assert(K % kBoxCols == 0, "linear: K must be a multiple of 64");
  static_assert(kPadRows * 128 * BOXES <= kSlotBytes, "linear group: chunk larger than a stream slot");
  // Row `row` of member m, batch row b, from its f32 sum.
  const auto store = [&](int m, int row, int b, float v) {
    if constexpr (BIAS) v = __fadd_rn(v, bf16_to_f32(ld_const_bf16(dptr<const bf16_t>(d, slots::Linear::group_bias(m)) + row)));
    dptr<bf16_t>(d, slots::Linear::group_y(m))[static_cast<int64_t>(b) * kYStride[m] + row] = f32_to_bf16(v);
  };
  if constexpr (B >= 2) {
    TcRowGroups<K, B, BOXES, EPS_BITS, kPadRows> tc(d, c);
    const float* sums = tc.run(c.next_chunk(), TcRows{{R0, R1, R2, R3}, {kPad[0], kPad[1], kPad[2], kPad[3]}});
    for (int u = threadIdx.x; u < kPadRows * B; u += kThreads) {
      int q = u / B, m = 0;
      while (m < 3 && q >= kPad[m]) q -= kPad[m++];
      if (q < kRows[m]) store(m, q, u % B, sums[u]);
    }
  } else {
    constexpr int RW = (kTotal + kWarps - 1) / kWarps;
    static_assert(LinearScratch<K, B, X_F32>::kBytes <= kScratchBytes, "linear: scratch too small");
    load_x_normed<K, B, X_F32, EPS_BITS>(d, c.scratch);
    body_sync();
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    // Row i of this warp: overall row q = warp + i * kWarps, of member m.
    int row[RW], pad[RW], before[RW], member[RW];
#pragma unroll
    for (int i = 0; i < RW; ++i) {
      int q = warp + i * kWarps, m = 0, padded_before = 0;
      while (m < 3 && q >= kRows[m]) {
        q -= kRows[m];
        padded_before += kPad[m];
        ++m;
      }
      const bool valid = q < kRows[m];
      row[i] = valid ? q : -1;
      pad[i] = kPad[m];
      before[i] = padded_before;
      member[i] = m;
    }
    float acc[RW][B][8];
    accumulate_row_group<K, B, BOXES, X_F32, RW>(c, c.next_chunk(), row, pad, before, lane, acc);
#pragma unroll
    for (int i = 0; i < RW; ++i) {
      if (row[i] < 0) continue;
#pragma unroll
      for (int b = 0; b < B; ++b) {
        const float v = warp_lane_finish(acc[i][b]);
        if (lane == 0) store(member[i], row[i], b, v);
      }
    }
  }
}

}  // namespace dev
}  // namespace mpk
