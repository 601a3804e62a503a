// Per-head arithmetic of attention's inputs, shared by the qk_norm, rope and kv_append
// bodies and by the fused attention (an attention operator that norms, ropes and
// appends its own heads; docs/ir.md): the sum of squares of one head in the canonical
// order (one thread, HD <= 256), the rotate-half RoPE of one pair, and the prologue that
// prepares a KV head's query heads (and its k and v) exactly as the unfused operators
// store them: rms-normed (q/k norm) and rounded to bf16, then roped and rounded again.
#pragma once

#include <cstdint>

#include "runtime/device/common.cuh"
#include "runtime/device/lane_order.cuh"

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

// Where the heads of one batch row come from and go to. q holds G heads (raw, rows of
// qstride); k and v one head each (rows of kvstride); the caches are [B, S, NKV, HD]
// offset to the head; qw / kw are the q / k norm weights [HD] (unused without a norm);
// rope is the (cos, sin) table [S][HD / 2].
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

template <int HD, int G, bool KV>
struct HeadScratch {
  static constexpr int kHeads = G + (KV ? 1 : 0);
  static constexpr int kBytes = ((kHeads * HD * 4 + kHeads * 4) + 15) / 16 * 16;
};

// Batch row b at position pos: the G query heads normed (EPS_BITS != 0: the f32 bits of
// eps) and roped into qs (f32, [G][HD]); with KV the k head likewise into k_cache and v
// into v_cache at pos. tmp holds HeadScratch bytes. Ends with the body threads
// synchronized (qs and the cache rows visible to the block).
template <int HD, int G, int S, int NKV, int EPS_BITS, bool KV>
__device__ void prepare_heads(const HeadIo& io, int b, int pos, float* qs, unsigned char* tmp) {
  constexpr int kHalf = HD / 2;
  constexpr int H = HeadScratch<HD, G, KV>::kHeads;
  float* raw = reinterpret_cast<float*>(tmp);  // [H][HD]
  float* r = raw + H * HD;                    // [H]
  const bool in_cache = pos < S;              // the host never runs past max_seq_len
  const int64_t row = (static_cast<int64_t>(b) * S + pos) * NKV * HD;
  for (int u = threadIdx.x; u < H * HD; u += kThreads) {
    const int h = u / HD, i = u % HD;
    const bf16_t* src = h < G ? io.q + b * io.qstride + h * HD + i : io.k + b * io.kvstride + i;
    raw[u] = bf16_to_f32(ld_cg_bf16(src));
  }
  if constexpr (KV) {
    for (int i = threadIdx.x; i < HD; i += kThreads)
      if (in_cache) io.vc[row + i] = ld_cg_bf16(io.v + b * io.kvstride + i);
  }
  body_sync();
  if constexpr (EPS_BITS != 0) {
    if (threadIdx.x < H) {
      const float* x = raw + threadIdx.x * HD;
      r[threadIdx.x] = head_rms_scale<HD>([&](int i) { return x[i]; }, __int_as_float(EPS_BITS));
    }
    body_sync();
  }
  const float2* t = io.rope + static_cast<int64_t>(min(pos, S - 1)) * kHalf;
  for (int u = threadIdx.x; u < H * kHalf; u += kThreads) {
    const int h = u / kHalf, i = u % kHalf;
    float x0 = raw[h * HD + i], x1 = raw[h * HD + i + kHalf];
    if constexpr (EPS_BITS != 0) {
      const bf16_t* w = h < G ? io.qw : io.kw;
      x0 = normed(x0, r[h], bf16_to_f32(ld_const_bf16(w + i)));
      x1 = normed(x1, r[h], bf16_to_f32(ld_const_bf16(w + i + kHalf)));
    }
    bf16_t y0, y1;
    rope_rotate(x0, x1, __ldg(t + i), y0, y1);
    if (h < G) {
      qs[h * HD + i] = bf16_to_f32(y0);
      qs[h * HD + i + kHalf] = bf16_to_f32(y1);
    } else if (in_cache) {
      io.kc[row + i] = y0;
      io.kc[row + i + kHalf] = y1;
    }
  }
  body_sync();
}

}  // namespace dev
}  // namespace mpk
