// Linear row groups on tensor cores (batch >= 2, or a prefill chunk's rows): y[b, r] =
// sum_k x[b, k] W[r, k] by mma.sync m16n8k16 (bf16 operands, f32 accumulation). The
// weight rows are the 16-row A operand, read by ldmatrix straight from the stream's
// swizzled boxes; the rows of x are the 8 columns of B (a tile per 8 rows). Up to
// kTcMaxRows rows (up to four tiles) every output is the sum, in slice order, of
// kTcKSlices partial sums: partial s adds the k16 steps s, s + 8, s + 16, ... in
// ascending order (one MMA chain). Warp w computes the partials w (w + kWarps, ...) of
// every 16-row tile of the row group, so all warps work on every chunk however few rows
// a task has. Above (a prefill chunk of up to kTcMaxChunkRows rows), eight partials of
// every output would not fit the registers: the warps split the outputs instead, and
// each output is one MMA chain over every k16 step in ascending order. Either order
// depends on K and the rows alone: the same bits under every schedule, linear group and
// row-group tiling, and in the per-op baseline; not the CPU's lane order (docs/ir.md,
// "Exactness").
//
// x reaches the MMAs through shared memory, loaded by cp.async (abi::tc_linear_scratch):
// whole, once per task, when it fits the budget; else in a ring of kSlices slices of a
// chunk's columns running kSlices - 1 chunks ahead of the MMAs, since a load of x waits
// behind the weight stream's traffic for microseconds. A fused norm rms-normalizes x in
// shared memory, as load_x_normed does. The scratch so stays within a fixed budget
// whatever K and the batch are.
#pragma once

#include <cstdint>

#include "runtime/device/common.cuh"
#include "runtime/device/context.cuh"
#include "runtime/device/heads.cuh"
#include "runtime/device/lane_order.cuh"
#include "runtime/device/stream.cuh"

namespace mpk {
namespace dev {

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}
__device__ __forceinline__ void ldmatrix_x2(uint32_t (&r)[2], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];" : "=r"(r[0]), "=r"(r[1]) : "r"(smem_addr(p)));
}
// d += a b (a: 16 x 16 row-major fragment, b: 16 x 8 column-major fragment).
__device__ __forceinline__ void mma_bf16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// The rows of a chunk: up to four parts one after another (a linear group's members, or
// a SwiGLU row group's gate and up rows), part p with rows[p] rows in boxes padded to
// pad[p] (a multiple of 8; 0 for an absent part). Slots number the padded rows of all
// parts in order; a row group's sums are indexed by slot.
struct TcRows {
  int rows[4];
  int pad[4];
};

template <int K, int B, int BOXES, int EPS_BITS, int SLOTS>
class TcRowGroups {
 public:
  static constexpr int kCols = BOXES * kBoxCols;
  static constexpr int kChunks = (K / kBoxCols + BOXES - 1) / BOXES;
  static constexpr int kNT = (B + 7) / 8;                         // 8-column tiles of the rows of x
  static constexpr int kMT = (SLOTS + 15) / 16;                   // 16-row tiles of a row group
  // Up to kTcMaxRows rows every warp computes its partials (of K) of the whole row group;
  // above, the warps split the outputs: kWM along the row group's tiles, kWarps / kWM
  // along x's, kNW 8-column tiles each (even: ldmatrix.x4 loads two).
  static constexpr bool kSplitK = tc_split_k(B);
  static constexpr int kSW = kSplitK ? (kTcKSlices + kWarps - 1) / kWarps : 1;  // partials per warp
  static constexpr int kWM = kSplitK || kMT < 2 ? 1 : 2;
  static constexpr int kTW = kSplitK ? kMT : (kMT + kWM - 1) / kWM;  // 16-row tiles per warp
  static constexpr int kNW = kSplitK ? kNT : ((kNT + kWarps / kWM - 1) / (kWarps / kWM) + 1) / 2 * 2;
  static constexpr int kXLoads = kNW == 1 ? 1 : (kNW + 1) / 2;  // ldmatrix of x per k16 step: .x2, or .x4 per two tiles
  static constexpr TcLinearScratch kAt = tc_linear_scratch(B, K, kCols, SLOTS, kWarps, EPS_BITS != 0, tc_x_budget(kChunk > 1, B));
  static constexpr bool kWhole = kAt.whole();
  static constexpr int kSlices = static_cast<int>(kAt.slices);  // the ring's (not whole)
  // bf16 per row of x in shared memory: 16 bytes of padding keep ldmatrix conflict-free.
  static constexpr int kStride = static_cast<int>(kAt.x_stride);
  static_assert(B >= 2 && B <= kTcMaxChunkRows, "tensor-core linear: 2..kTcMaxChunkRows rows");
  static_assert(K % kBoxCols == 0, "linear: K must be a multiple of 64");
  static_assert(kAt.bytes <= kScratchBytes, "tensor-core linear: scratch too small");

  // Starts the loads of x (and computes the rms scales of a fused norm); returns once the
  // first chunk's columns are ready.
  __device__ TcRowGroups(const TaskDesc& d, TaskCtx& c)
      : c_(c), x_(dptr<const bf16_t>(d, slots::Linear::kX)), norm_(dptr<const bf16_t>(d, slots::Linear::kNorm)) {
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    if constexpr (kWhole) {
      for (int ch = 0; ch < kChunks; ++ch) copy(ch, ch);
      cp_async_commit();
      cp_async_wait<0>();
      body_sync();
      if constexpr (EPS_BITS != 0) {  // the rows' squares from shared memory
        for (int b = warp; b < B; b += kWarps) {
          const float ss = warp_sum_squares<K>(reinterpret_cast<const bf16_t*>(x_at(0) + b * kStride * 2), lane);
          if (lane == 0) rms()[b] = rms_scale(ss, K, __int_as_float(EPS_BITS));
        }
        body_sync();
#pragma unroll 1
        for (int ch = 0; ch < kChunks; ++ch) normalize(ch, ch);
        body_sync();
      }
    } else {
      for (int n = 0; n < kSlices - 1; ++n) {
        copy(n % kChunks, n);
        cp_async_commit();
      }
      if constexpr (EPS_BITS != 0) {  // the rows' squares from global memory, while the slices land
        for (int b = warp; b < B; b += kWarps) {
          const bf16_t* row = x_ + static_cast<int64_t>(b) * K;
          const float ss = warp_sum_squares_by<K>([&](int k, float (&f)[8]) { unpack8(ld_cg_v4(row + k), f); }, lane);
          if (lane == 0) rms()[b] = rms_scale(ss, K, __int_as_float(EPS_BITS));
        }
      }
      cp_async_wait<kSlices - 2>();
      body_sync();
      if constexpr (EPS_BITS != 0) {
        normalize(0, 0);
        body_sync();
      }
    }
  }

  // The sums of one row group, its first chunk `first` (acquired): sums[slot * B + b],
  // valid for every row of `rows` once this returns (to all body threads) and until the
  // next but one call (split K; the next call above kTcMaxRows rows).
  __device__ const float* run(const unsigned char* first, const TcRows& rows) {
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int slots = rows.pad[0] + rows.pad[1] + rows.pad[2] + rows.pad[3];
    const int tiles = (slots + 15) / 16;
    // The row group's 16-row tiles this warp computes: t0, t0 + dt, ...
    const int t0 = kSplitK ? 0 : warp % kWM, dt = kSplitK ? 1 : kWM;
    // This lane's ldmatrix row of each of them: the part's padded rows before it, the
    // part's padding and its row (a row past the part's reads row 0 of part 0: unused).
    int before[kTW], pad[kTW], row[kTW];
#pragma unroll
    for (int i = 0; i < kTW; ++i) {
      int q = (t0 + i * dt) * 16 + (lane & 7) + (lane & 8), padded_before = 0, p = 0;
      while (p < 3 && q >= rows.pad[p]) {
        q -= rows.pad[p];
        padded_before += rows.pad[p++];
      }
      const bool valid = q < rows.rows[p];
      before[i] = valid ? padded_before : 0;
      pad[i] = valid ? rows.pad[p] : rows.pad[0];
      row[i] = valid ? q : 0;
    }
    const int half = lane >> 4;  // which 8 columns of the k16 step this lane's A address names
    // This lane's ldmatrix row of x in load i (a row past B reads row 0: unused): split K,
    // row n + 16 i; else the warp's 8-column tiles from u0, two a load.
    const int u0 = kSplitK ? 0 : warp / kWM * kNW;
    const int n = (lane & 7) + (kNT >= 2 ? (lane >> 4) * 8 : 0);
    int xoff[kXLoads];
#pragma unroll
    for (int i = 0; i < kXLoads; ++i) {
      const int r = u0 * 8 + n + 16 * i;
      xoff[i] = (r < B ? r : 0) * kStride + ((lane >> 3) & 1) * 8;
    }
    float acc[kSW][kTW][kNW][4];
#pragma unroll
    for (int e = 0; e < kSW * kTW * kNW * 4; ++e) (&acc[0][0][0][0])[e] = 0.f;
#pragma unroll 1
    for (int ch = 0; ch < kChunks; ++ch) {
      if constexpr (!kWhole) {  // the slice kSlices - 1 chunks ahead, into the one read last
        const int ahead = pos_ + kSlices - 1;
        copy(ahead % kChunks, ahead % kSlices);
        cp_async_commit();
      }
      const unsigned char* w = ch == 0 ? first : c_.next_chunk();
      const int nboxes = ch == kChunks - 1 ? K / kBoxCols - ch * BOXES : BOXES;
      const bf16_t* xs = reinterpret_cast<const bf16_t*>(x_at(kWhole ? ch : pos_ % kSlices));
      // The A fragments of k16 step s of box bx, for the tiles below `tiles`.
      const auto load_a = [&](uint32_t(&a)[kTW][4], int bx, int s) {
#pragma unroll
        for (int i = 0; i < kTW; ++i)
          if (t0 + i * dt < tiles)
            ldmatrix_x4(a[i], w + (before[i] * nboxes + bx * pad[i] + row[i]) * 128 +
                                  (((2 * s + half) ^ (row[i] & 7)) << 4));
      };
      if constexpr (kSplitK) {
#pragma unroll
        for (int j = 0; j < kSW; ++j) {
          // This warp's k16 steps of the chunk: those of partial warp + j * kWarps.
          const int first_step = (warp + j * kWarps - ch * BOXES * 4) & (kTcKSlices - 1);
          if (warp + j * kWarps >= kTcKSlices) continue;
#pragma unroll 1
          for (int k = first_step; k < nboxes * 4; k += kTcKSlices) {
            const int bx = k >> 2, s = k & 3;
            uint32_t xb[4 * kXLoads];  // tile u's b0, b1 at 2u, 2u + 1
            if constexpr (kNT == 1) {
              ldmatrix_x2(reinterpret_cast<uint32_t(&)[2]>(xb), xs + xoff[0] + bx * kBoxCols + s * 16);
            } else {
#pragma unroll
              for (int i = 0; i < kXLoads; ++i)
                ldmatrix_x4(reinterpret_cast<uint32_t(&)[4]>(xb[4 * i]), xs + xoff[i] + bx * kBoxCols + s * 16);
            }
            uint32_t a[kTW][4];
            load_a(a, bx, s);
#pragma unroll
            for (int t = 0; t < kMT; ++t)
              if (t < tiles)
#pragma unroll
                for (int u = 0; u < kNT; ++u) mma_bf16(acc[j][t][u], a[t], xb[2 * u], xb[2 * u + 1]);
          }
        }
      } else if (u0 < kNT) {  // every k16 step of the chunk in order: one MMA chain per output
#pragma unroll 1
        for (int bx = 0; bx < nboxes; ++bx)
#pragma unroll
          for (int s = 0; s < 4; ++s) {
            uint32_t xb[4 * kXLoads];
#pragma unroll
            for (int i = 0; i < kXLoads; ++i)
              ldmatrix_x4(reinterpret_cast<uint32_t(&)[4]>(xb[4 * i]), xs + xoff[i] + bx * kBoxCols + s * 16);
            uint32_t a[kTW][4];
            load_a(a, bx, s);
#pragma unroll
            for (int i = 0; i < kTW; ++i)
              if (t0 + i * dt < tiles)
#pragma unroll
                for (int u = 0; u < kNW; ++u) mma_bf16(acc[0][i][u], a[i], xb[2 * u], xb[2 * u + 1]);
          }
      }
      c_.done_chunk();
      if constexpr (!kWhole) {  // the next chunk's slice: landed, and normalized
        ++pos_;
        cp_async_wait<kSlices - 2>();
        if constexpr (EPS_BITS != 0) {
          body_sync();
          normalize(pos_ % kChunks, pos_ % kSlices);
        }
        body_sync();
      }
    }
    // Lane l holds rows l / 4 and l / 4 + 8 of a tile, x rows 2 (l % 4) and 2 (l % 4) + 1
    // of each 8-column tile.
    const auto each = [&](auto f) {
#pragma unroll
      for (int j = 0; j < kSW; ++j)
#pragma unroll
        for (int i = 0; i < kTW; ++i)
#pragma unroll
          for (int u = 0; u < kNW; ++u)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
              const int r = (t0 + i * dt) * 16 + (lane >> 2) + (e >> 1) * 8, b = (u0 + u) * 8 + (lane & 3) * 2 + (e & 1);
              if (t0 + i * dt < tiles && r < SLOTS && b < B) f(j, r, b, acc[j][i][u][e]);
            }
    };
    float* sums = reinterpret_cast<float*>(c_.scratch + kAt.sums) + sums_ * SLOTS * B;
    if constexpr (kSplitK) {  // the partials to shared memory, then each sum in slice order
      float* part = reinterpret_cast<float*>(c_.scratch + kAt.partials);  // [kTcKSlices][SLOTS][B]
      each([&](int j, int r, int b, float v) {
        if (warp + j * kWarps < kTcKSlices) part[((warp + j * kWarps) * SLOTS + r) * B + b] = v;
      });
      body_sync();
      for (int i = threadIdx.x; i < slots * B; i += kThreads) {
        float v = part[i];
#pragma unroll
        for (int p = 1; p < kTcKSlices; ++p) v = __fadd_rn(v, part[p * SLOTS * B + i]);
        sums[i] = v;
      }
      sums_ ^= 1;
    } else {  // the sums themselves, once the last row group's are read
      body_sync();
      each([&](int, int r, int b, float v) { sums[r * B + b] = v; });
    }
    body_sync();
    return sums;
  }

 private:
  __device__ float* rms() { return reinterpret_cast<float*>(c_.scratch + kAt.rms); }
  // Slice i: the origin of its x rows (rows of kStride bf16) and of its norm weight.
  // Whole, slice i is column chunk i in place.
  __device__ unsigned char* x_at(int i) {
    return c_.scratch + kAt.x + (kWhole ? i * kCols * 2 : i * kAt.slice_bytes);
  }
  __device__ unsigned char* w_at(int i) {
    return kWhole ? c_.scratch + kAt.x + B * kStride * 2 + i * kCols * 2 : x_at(i) + B * kStride * 2;
  }

  // Calls f(b, p) for this thread's 16-byte pieces of column chunk ch: batch row b (B:
  // the norm weight), columns p * 8 ... of the chunk.
  template <class F>
  __device__ static void for_pieces(int ch, F f) {
    const int per_row = (ch == kChunks - 1 ? K - ch * kCols : kCols) / 8;
    const int pieces = (B + (EPS_BITS != 0 ? 1 : 0)) * per_row;
    for (int i = threadIdx.x; i < pieces; i += kThreads) f(i / per_row, i % per_row);
  }
  // Column chunk ch of x (and of the norm weight) into slice i, asynchronously.
  __device__ void copy(int ch, int i) {
    for_pieces(ch, [&](int b, int p) {
      const int k = ch * kCols + p * 8;
      if (b < B) {
        cp_async16(x_at(i) + (b * kStride + p * 8) * 2, x_ + static_cast<int64_t>(b) * K + k);
      } else {
        cp_async16(w_at(i) + p * 16, norm_ + k);
      }
    });
  }
  // Slice i, holding column chunk ch, rms-normed in place (as load_x_normed).
  __device__ void normalize(int ch, int i) {
    const uint4* w = reinterpret_cast<const uint4*>(w_at(i));
    for_pieces(ch, [&](int b, int p) {
      if (b == B) return;
      uint4* at = reinterpret_cast<uint4*>(x_at(i) + (b * kStride + p * 8) * 2);
      float f[8], wf[8];
      unpack8(*at, f);
      unpack8(w[p], wf);
      const float r = rms()[b];
      uint32_t out[4];
#pragma unroll
      for (int e = 0; e < 8; e += 2)
        out[e / 2] = static_cast<uint32_t>(f32_to_bf16(normed(f[e], r, wf[e]))) |
                     (static_cast<uint32_t>(f32_to_bf16(normed(f[e + 1], r, wf[e + 1]))) << 16);
      *at = make_uint4(out[0], out[1], out[2], out[3]);
    });
  }

  TaskCtx& c_;
  const bf16_t* x_;
  const bf16_t* norm_;
  int pos_ = 0;   // chunks consumed so far (ring: the slice of chunk pos_ is pos_ % kSlices)
  int sums_ = 0;  // the sums buffer of the next row group
};

}  // namespace dev
}  // namespace mpk
