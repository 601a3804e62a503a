// Per-head arithmetic of attention's inputs, shared by the qk_norm, rope and kv_append
// bodies and by the fused attention (an attention operator that norms, ropes and
// appends its own heads; docs/ir.md): the sum of squares of one head in the canonical
// order (one thread, HD <= 256), the rotate-half RoPE of one pair, and the prologue that
// prepares a KV head's query heads (and its k and v) exactly as the unfused operators
// store them: rms-normed (q/k norm) and rounded to bf16, then roped and rounded again,
// with every load a task needs for it issued at once.
#pragma once

#include <cstdint>

#include "runtime/device/common.cuh"
#include "runtime/device/lane_order.cuh"
#include "runtime/device/positions.cuh"

namespace mpk {
namespace dev {

// exp rounded once from double: the correctly rounded f32 result the CPU's expf gives.
__device__ __forceinline__ float exp_rn(float x) { return static_cast<float>(exp(static_cast<double>(x))); }

// 1 / sqrt(ss / n + eps), each operation rounded as the CPU rounds it.
__device__ __forceinline__ float rms_scale(float ss, int n, float eps) {
  return __fdiv_rn(1.0f, __fsqrt_rn(__fadd_rn(__fdiv_rn(ss, static_cast<float>(n)), eps)));
}

// The rms scale of one head of HD values, get(i) its element i (each exactly a bf16),
// in the canonical reduction order by one thread.
template <int HD, class Get>
__device__ __forceinline__ float head_rms_scale(Get get, float eps) {
  static_assert(HD % 8 == 0 && HD <= 256, "head_dim must be a multiple of 8, at most 256");
  float lanes[HD / 8];
#pragma unroll
  for (int i = 0; i < HD / 8; ++i) {
    float l = __fmul_rn(get(8 * i), get(8 * i));
#pragma unroll
    for (int e = 1; e < 8; ++e) l = fmaf(get(8 * i + e), get(8 * i + e), l);
    lanes[i] = l;
  }
  return rms_scale(thread_lane_tree(lanes), HD, eps);
}

// x * r * w rounded as the unfused rms norms store it (bf16), back as f32.
__device__ __forceinline__ float normed(float x, float r, float w) {
  return bf16_to_f32(f32_to_bf16(__fmul_rn(__fmul_rn(x, r), w)));
}

// The rotate-half pair (x0, x1) = (x[i], x[i + hd/2]) at the angle whose (cos, sin) is t.
__device__ __forceinline__ void rope_rotate(float x0, float x1, float2 t, bf16_t& y0, bf16_t& y1) {
  y0 = f32_to_bf16(__fsub_rn(__fmul_rn(x0, t.x), __fmul_rn(x1, t.y)));
  y1 = f32_to_bf16(__fadd_rn(__fmul_rn(x1, t.x), __fmul_rn(x0, t.y)));
}

// Where the heads of one row come from and go to. q holds G heads (raw, rows of
// qstride); k and v one head each (rows of kvstride); the caches are [B, S, NKV, HD]
// offset to the head (and the first sequence); qw / kw are the q / k norm weights [HD]
// (unused without a norm); rope is the (cos, sin) table [S][HD / 2].
struct HeadIo {
  const bf16_t* q;
  const bf16_t* k;
  const bf16_t* v;
  const bf16_t* qw;
  const bf16_t* kw;
  const float2* rope;
  bf16_t* kc;
  bf16_t* vc;
  int64_t qstride;
  int64_t kvstride;
};

// Shared memory of preparing R rows' heads (abi::head_scratch_bytes): the raw heads (f32,
// [R][H][HD], for the norms' sums) and their scales; with KV, each row's roped k and v
// (bf16, [R][2][HD]), which attend reads there.
template <int HD, int G, bool KV, int R = 1>
struct HeadScratch {
  static constexpr int kHeads = G + (KV ? 1 : 0);
  static constexpr int kRaw = R * kHeads * HD * 4;
  static constexpr int kScales = (R * kHeads * 4 + 15) / 16 * 16;
  static constexpr int kBytes = static_cast<int>(abi::head_scratch_bytes(HD, G, KV, R));
  __device__ static bf16_t* current(unsigned char* tmp, int r = 0) {
    return reinterpret_cast<bf16_t*>(tmp + kRaw + kScales) + r * 2 * HD;
  }
};

// Preparing the heads of n <= R rows b0.. (at(r): row b0 + r's position, positions.cuh): the G
// query heads normed (EPS_BITS != 0: the f32 bits of eps) and roped into qs (f32,
// [R][G][HD]); with KV also the k head and v, into HeadScratch::current and, with STORE,
// into k_cache and v_cache at the row's sequence and position (when the row stores).
// issue() requests everything a thread needs at once (its rotate-half pairs' raw values,
// norm weights and angles, its elements of v); finish() computes and stores, and ends
// with the body threads synchronized (qs, the cache rows and HeadScratch::current visible
// to the block). R rows at once keep a thread's pairs within abi::head_prep_rows.
template <int HD, int G, int S, int NKV, int EPS_BITS, bool KV, bool STORE = KV, int R = 1>
struct HeadPrep {
  static constexpr int H = G + (KV ? 1 : 0), kHalf = HD / 2;
  static constexpr int kPer = (R * H * kHalf + kThreads - 1) / kThreads;
  static constexpr int kVPer = (R * HD + kThreads - 1) / kThreads;
  float x0[kPer], x1[kPer], w0[kPer], w1[kPer];
  float2 t[kPer];
  bf16_t v[kVPer];

  template <class At>
  __device__ void issue(const HeadIo& io, int b0, int n, At at) {
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
      const int u = threadIdx.x + j * kThreads;
      if (u >= n * H * kHalf) continue;
      const int r = u / (H * kHalf), h = u / kHalf % H, i = u % kHalf;
      const int64_t b = b0 + r;
      const bf16_t* src = h < G ? io.q + b * io.qstride + h * HD : io.k + b * io.kvstride;
      x0[j] = bf16_to_f32(ld_cg_bf16(src + i));
      x1[j] = bf16_to_f32(ld_cg_bf16(src + i + kHalf));
      if constexpr (EPS_BITS != 0) {
        const bf16_t* w = h < G ? io.qw : io.kw;
        w0[j] = bf16_to_f32(ld_const_bf16(w + i));
        w1[j] = bf16_to_f32(ld_const_bf16(w + i + kHalf));
      }
      t[j] = __ldg(io.rope + static_cast<int64_t>(min(at(r).pos, S - 1)) * kHalf + i);
    }
    if constexpr (KV) {
#pragma unroll
      for (int j = 0; j < kVPer; ++j) {
        const int i = threadIdx.x + j * kThreads;
        if (i < n * HD) v[j] = ld_cg_bf16(io.v + (b0 + i / HD) * io.kvstride + i % HD);
      }
    }
  }

  template <class At>
  __device__ void finish(const HeadIo& io, int n, At at, float* qs, unsigned char* tmp) {
    using Sh = HeadScratch<HD, G, KV, R>;
    float* raw = reinterpret_cast<float*>(tmp);  // [R][H][HD]
    float* r = reinterpret_cast<float*>(tmp + Sh::kRaw);
    if constexpr (EPS_BITS != 0) {
#pragma unroll
      for (int j = 0; j < kPer; ++j) {
        const int u = threadIdx.x + j * kThreads;
        if (u >= n * H * kHalf) continue;
        const int rh = u / kHalf, i = u % kHalf;
        raw[rh * HD + i] = x0[j];
        raw[rh * HD + i + kHalf] = x1[j];
      }
      body_sync();
      for (int rh = threadIdx.x; rh < n * H; rh += kThreads) {
        const float* x = raw + rh * HD;
        r[rh] = head_rms_scale<HD>([&](int i) { return x[i]; }, __int_as_float(EPS_BITS));
      }
      body_sync();
    }
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
      const int u = threadIdx.x + j * kThreads;
      if (u >= n * H * kHalf) continue;
      const int rh = u / kHalf, row = rh / H, h = rh % H, i = u % kHalf;
      float a = x0[j], c = x1[j];
      if constexpr (EPS_BITS != 0) {
        a = normed(a, r[rh], w0[j]);
        c = normed(c, r[rh], w1[j]);
      }
      bf16_t y0, y1;
      rope_rotate(a, c, t[j], y0, y1);
      if (h < G) {
        qs[(row * G + h) * HD + i] = bf16_to_f32(y0);
        qs[(row * G + h) * HD + i + kHalf] = bf16_to_f32(y1);
      } else {
        bf16_t* cur = Sh::current(tmp, row);  // k [HD], v [HD]
        cur[i] = y0;
        cur[i + kHalf] = y1;
        const RowPos p = at(row);
        if (STORE && p.stores && p.pos < S) {  // the host never runs past max_seq_len
          const int64_t dst = (static_cast<int64_t>(p.seq) * S + p.pos) * NKV * HD;
          io.kc[dst + i] = y0;
          io.kc[dst + i + kHalf] = y1;
        }
      }
    }
    if constexpr (KV) {
#pragma unroll
      for (int j = 0; j < kVPer; ++j) {
        const int u = threadIdx.x + j * kThreads;
        if (u >= n * HD) continue;
        const int row = u / HD, i = u % HD;
        Sh::current(tmp, row)[HD + i] = v[j];
        const RowPos p = at(row);
        if (STORE && p.stores && p.pos < S) io.vc[(static_cast<int64_t>(p.seq) * S + p.pos) * NKV * HD + i] = v[j];
      }
    }
    body_sync();
  }
};

// Rows [0, B) of one kv head's k and v (io's k, v, k norm weight, RoPE table and caches)
// into the caches, each row at its own sequence and position (row_pos of row0 + b at
// `step`), k normed and roped first (HeadPrep, abi::head_prep_rows rows at once): a roped
// kv_append's body, and the first phase of a prefill chunk's fused attention. tmp:
// HeadScratch<HD, 0, true, R>.
template <int HD, int B, int S, int NKV, int EPS_BITS>
__device__ __forceinline__ void append_heads(const HeadIo& io, const KernelParams& p, int32_t step, int32_t row0,
                                             unsigned char* tmp) {
  constexpr int R = static_cast<int>(abi::head_prep_rows(HD, 1, B, kThreads));
#pragma unroll 1
  for (int b0 = 0; b0 < B; b0 += R) {
    const int n = min(R, B - b0);
    const auto at = [&](int r) { return row_pos(p, step, row0 + b0 + r); };
    HeadPrep<HD, 0, S, NKV, EPS_BITS, true, true, R> prep;
    prep.issue(io, b0, n, at);
    prep.finish(io, n, at, nullptr, tmp);
  }
}

}  // namespace dev
}  // namespace mpk
