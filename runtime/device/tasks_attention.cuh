// Decode attention with grouped-query heads, in the CPU executor's exact order. One
// task serves the G = nq/nkv query heads of one KV head h over positions [t0, t1) of
// the cache (t1 <= pos + 1). Per query head: scores s_t = scale * (q . k_t) (the dot
// ascending over the head dimension), m = max s_t, p_t = exp(s_t - m), l = sum p_t and
// o = sum p_t v_t ascending over t, then o / l. Scores are computed in parallel over
// (head, position); the sums run one chain per head (l) and per output element (o),
// over V staged through shared memory in tiles of kTile positions. The merge of
// partial tasks (attention_partial -> attention_merge) follows docs/ir.md: M = max m_s
// over non-empty splits, w_s = l_s exp(m_s - M), y = sum_s w_s o_s / sum_s w_s.
// An attention operator fused with its q/k norms, RoPE and KV append (fuse-attention)
// prepares its heads first (heads.cuh): its attention task norms and ropes the G query
// heads and the k head, appends k and v at pos and attends; its partial tasks prepare
// their query heads (its kv_append tasks the k head).
#pragma once

#include <cstdint>

#include "runtime/device/common.cuh"
#include "runtime/device/context.cuh"
#include "runtime/device/heads.cuh"
#include "runtime/device/lane_order.cuh"
#include "runtime/device/tasks_elementwise.cuh"

namespace mpk {
namespace dev {

// Shared memory of one attention task: q [G][HD] f32, scores [G][RMAX] f32, a V tile
// [kTile][HD] bf16, and m, l per head.
template <int HD, int G, int RMAX>
struct AttnScratch {
  static constexpr int kTile = 64;
  static constexpr int kQ = G * HD * 4;
  static constexpr int kS = ((G * RMAX * 4 + 15) / 16) * 16;
  static constexpr int kV = kTile * HD * 2;
  static constexpr int kBytes = kQ + kS + kV + 2 * G * 4;
};

// The G query heads of batch row b (rows of NKV * G * HD) into qs (the start of the
// scratch, f32), as attend expects them; ends with the body threads synchronized.
template <int HD, int G, int NKV>
__device__ __forceinline__ void load_q(const bf16_t* q, int b, unsigned char* scratch) {
  float* qs = reinterpret_cast<float*>(scratch);
#pragma unroll 4
  for (int u = threadIdx.x; u < G * HD; u += kThreads)
    qs[u] = bf16_to_f32(ld_cg_bf16(q + static_cast<int64_t>(b) * NKV * G * HD + u));
  body_sync();
}

// Where a fused attention's heads come from (heads.cuh), for its tasks' pointer slots:
// raw q at ptr0, k and v at ptr4 / ptr5, the rope table at ptr6, the q / k norm
// weights at ptr7 / ptr8.
template <int HD, int G, int NKV>
__device__ __forceinline__ HeadIo fused_heads(const TaskDesc& d) {
  return HeadIo{dptr<const bf16_t>(d, 0), dptr<const bf16_t>(d, 4), dptr<const bf16_t>(d, 5),
                dptr<const bf16_t>(d, 7), dptr<const bf16_t>(d, 8), dptr<const float2>(d, 6),
                dptr<bf16_t>(d, 1),       dptr<bf16_t>(d, 2),       NKV * G * HD,
                NKV * HD};
}

// Attends the G heads of batch row b, whose roped query heads are in qs (the start of
// the scratch, f32, from load_q or prepare_heads), over [t0, t1), t1 - t0 <= RMAX. Calls
// out(g, i, o_i, m, l) for each head g and element i, o normalized (o = 0, m = -inf,
// l = 0 when the range is empty).
template <int HD, int G, int S, int NKV, int RMAX, class Out>
__device__ __forceinline__ void attend(const bf16_t* kc, const bf16_t* vc, int b, int t0, int t1, float scale,
                                       unsigned char* scratch, Out out) {
  using Sh = AttnScratch<HD, G, RMAX>;
  static_assert(HD % 8 == 0, "attention: head_dim must be a multiple of 8");
  static_assert(G <= kWarps, "attention: more query heads per KV head than warps");
  const float* qs = reinterpret_cast<const float*>(scratch);
  float* sc = reinterpret_cast<float*>(scratch + Sh::kQ);
  bf16_t* vt = reinterpret_cast<bf16_t*>(scratch + Sh::kQ + Sh::kS);
  float* ml = reinterpret_cast<float*>(scratch + Sh::kQ + Sh::kS + Sh::kV);  // m[G], l[G]
  const int n = t1 > t0 ? t1 - t0 : 0;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  constexpr int L = HD / 8;  // 16-byte pieces of a head
  const int64_t row0 = static_cast<int64_t>(b) * S + t0;
  auto cache_piece = [&](const bf16_t* cache, int t, int piece) {
    return ld_cg_v4(cache + (row0 + t) * NKV * HD + piece * 8);
  };

  // V tiles pass through registers, so that a tile's loads overlap the work before it:
  // the first tile's with the scores, every other with the previous tile's sums.
  constexpr int kVPer = (Sh::kTile * L + kThreads - 1) / kThreads;
  uint4 vr[kVPer];
  auto load_v = [&](int tile) {
    const int cnt = min(Sh::kTile, n - tile);
#pragma unroll
    for (int j = 0; j < kVPer; ++j) {
      const int v = threadIdx.x + j * kThreads;
      if (v < cnt * L) vr[j] = cache_piece(vc, tile + v / L, v % L);
    }
  };
  load_v(0);

  // Scores s_t = scale * (q . k_t), q . k_t in the canonical order: piece j of the head
  // sums its 8 products left to right, the pieces add in thread_lane_tree's tree. Where
  // L is a power of two, L threads share a score and the tree is a shuffle butterfly
  // (the tree's padding adds only zeros); a thread requests all its K pieces at once.
  if constexpr ((L & (L - 1)) == 0 && L <= 32) {
    constexpr int kBatch = 8;
    const int units = G * n * L;
#pragma unroll 1
    for (int base = 0; base < units; base += kThreads * kBatch) {
      uint4 kv[kBatch];
#pragma unroll
      for (int j = 0; j < kBatch; ++j) {
        const int u = base + j * kThreads + threadIdx.x;
        if (u < units) kv[j] = cache_piece(kc, (u / L) % n, u % L);
      }
#pragma unroll
      for (int j = 0; j < kBatch; ++j) {
        if (base + j * kThreads >= units) break;  // the same for every thread
        const int u = base + j * kThreads + threadIdx.x;  // groups of L threads: all in or all out
        const int piece = u % L, t = (u / L) % (n > 0 ? n : 1), g = u / (L * (n > 0 ? n : 1));
        float l = 0.f;
        if (u < units) {
          float kf[8];
          unpack8(kv[j], kf);
          const float* qg = qs + g * HD + piece * 8;
          l = __fmul_rn(qg[0], kf[0]);
#pragma unroll
          for (int e = 1; e < 8; ++e) l = fmaf(qg[e], kf[e], l);
        }
#pragma unroll
        for (int off = L / 2; off >= 1; off >>= 1) l = __fadd_rn(l, __shfl_xor_sync(0xffffffffu, l, off));
        if (u < units && piece == 0) sc[g * RMAX + t] = __fmul_rn(scale, l);
      }
    }
  } else {
    for (int u = threadIdx.x; u < G * n; u += kThreads) {
      const int g = u / n, t = u % n;
      const float* qg = qs + g * HD;
      float lanes[L];  // one thread
#pragma unroll
      for (int i = 0; i < L; ++i) {
        float kf[8];
        unpack8(cache_piece(kc, t, i), kf);
        float l = __fmul_rn(qg[8 * i], kf[0]);
#pragma unroll
        for (int e = 1; e < 8; ++e) l = fmaf(qg[8 * i + e], kf[e], l);
        lanes[i] = l;
      }
      sc[g * RMAX + t] = __fmul_rn(scale, thread_lane_tree(lanes));
    }
  }
  body_sync();
  if (warp < G) {  // the maximum (exact in any order)
    float m = -INFINITY;
    for (int t = lane; t < n; t += 32) m = fmaxf(m, sc[warp * RMAX + t]);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    if (lane == 0) ml[warp] = m;
  }
  body_sync();
  for (int u = threadIdx.x; u < G * n; u += kThreads) {
    const int g = u / n, t = u % n;
    sc[g * RMAX + t] = exp_rn(__fsub_rn(sc[g * RMAX + t], ml[g]));
  }
  body_sync();
  if (threadIdx.x < G) {
    float l = 0.f;
    for (int t = 0; t < n; ++t) l = __fadd_rn(l, sc[threadIdx.x * RMAX + t]);
    ml[G + threadIdx.x] = l;
  }
  constexpr int kUnits = (G * HD + kThreads - 1) / kThreads;
  float o[kUnits];
#pragma unroll
  for (int k = 0; k < kUnits; ++k) o[k] = 0.f;
#pragma unroll 1
  for (int tile = 0; tile < n; tile += Sh::kTile) {
    const int cnt = min(Sh::kTile, n - tile);
#pragma unroll
    for (int j = 0; j < kVPer; ++j) {
      const int v = threadIdx.x + j * kThreads;
      if (v < cnt * L) *reinterpret_cast<uint4*>(vt + (v / L) * HD + (v % L) * 8) = vr[j];
    }
    body_sync();
    if (tile + Sh::kTile < n) load_v(tile + Sh::kTile);
#pragma unroll
    for (int k = 0; k < kUnits; ++k) {
      const int u = threadIdx.x + k * kThreads;
      if (u < G * HD) {
        const int g = u / HD, i = u % HD;
        const float* pg = sc + g * RMAX + tile;
        for (int tt = 0; tt < cnt; ++tt) o[k] = __fadd_rn(o[k], __fmul_rn(pg[tt], bf16_to_f32(vt[tt * HD + i])));
      }
    }
    body_sync();
  }
#pragma unroll
  for (int k = 0; k < kUnits; ++k) {
    const int u = threadIdx.x + k * kThreads;
    if (u < G * HD) {
      const int g = u / HD, i = u % HD;
      const float l = ml[G + g];
      out(g, i, n > 0 ? __fdiv_rn(o[k], l) : 0.f, ml[g], l);
    }
  }
  body_sync();
}

// ptr: q + h*G*HD (rows of NQ*HD), k_cache + h*HD, v_cache + h*HD, y + h*G*HD.
// arg0: scale (f32 bits). Positions [0, pos]. FUSED (an attention that norms, ropes and
// appends its heads; EPS_BITS != 0 with q/k norms): q is raw, and ptr4.. as fused_heads.
template <int HD, int G, int B, int S, int NKV, bool FUSED, int EPS_BITS>
__device__ void task_attention(const TaskDesc& d, TaskCtx& c) {
  static_assert(AttnScratch<HD, G, S>::kBytes + (FUSED ? HeadScratch<HD, G, true>::kBytes : 0) <= kScratchBytes,
                "attention: scratch too small");
  constexpr int kQStride = NKV * G * HD;
  bf16_t* y = dptr<bf16_t>(d, 3);
  const int t1 = c.step + 1 < S ? c.step + 1 : S;
#pragma unroll 1
  for (int b = 0; b < B; ++b) {
    if constexpr (FUSED)
      prepare_heads<HD, G, S, NKV, EPS_BITS, true>(fused_heads<HD, G, NKV>(d), b, c.step,
                                                   reinterpret_cast<float*>(c.scratch),
                                                   c.scratch + AttnScratch<HD, G, S>::kBytes);
    else
      load_q<HD, G, NKV>(dptr<const bf16_t>(d, 0), b, c.scratch);
    attend<HD, G, S, NKV, S>(dptr<const bf16_t>(d, 1), dptr<const bf16_t>(d, 2), b, 0, t1, arg_float(d, 0),
                             c.scratch, [&](int g, int i, float o, float, float) {
                               y[static_cast<int64_t>(b) * kQStride + g * HD + i] = f32_to_bf16(o);
                             });
  }
}

// As task_attention over [s0, s1) ∩ [0, pos] (s1 - s0 <= RMAX); ptr3:
// attn_part + (h*G*SPLITS + s)*(HD+2) of attn_part [B, NQ, SPLITS, HD+2] (f32).
// arg0: scale, arg1: s0, arg2: s1. FUSED: q is raw and prepared here (its k and v were
// appended by the operator's kv_append tasks).
template <int HD, int G, int B, int S, int NKV, int SPLITS, int RMAX, bool FUSED, int EPS_BITS>
__device__ void task_attention_partial(const TaskDesc& d, TaskCtx& c) {
  static_assert(AttnScratch<HD, G, RMAX>::kBytes + (FUSED ? HeadScratch<HD, G, false>::kBytes : 0) <=
                    kScratchBytes,
                "attention: scratch too small");
  constexpr int64_t kPartRow = static_cast<int64_t>(NKV) * G * SPLITS * (HD + 2);
  float* part = dptr<float>(d, 3);
  const int s0 = d.arg[1];
  const int s1 = min(d.arg[2], c.step + 1);
#pragma unroll 1
  for (int b = 0; b < B; ++b) {
    if constexpr (FUSED)
      prepare_heads<HD, G, S, NKV, EPS_BITS, false>(fused_heads<HD, G, NKV>(d), b, c.step,
                                                    reinterpret_cast<float*>(c.scratch),
                                                    c.scratch + AttnScratch<HD, G, RMAX>::kBytes);
    else
      load_q<HD, G, NKV>(dptr<const bf16_t>(d, 0), b, c.scratch);
    attend<HD, G, S, NKV, RMAX>(dptr<const bf16_t>(d, 1), dptr<const bf16_t>(d, 2), b, s0, s1, arg_float(d, 0),
                                c.scratch, [&](int g, int i, float o, float m, float l) {
                                  float* dst = part + b * kPartRow + static_cast<int64_t>(g) * SPLITS * (HD + 2);
                                  dst[i] = o;
                                  if (i == 0) {
                                    dst[HD] = m;
                                    dst[HD + 1] = l;
                                  }
                                });
  }
}

// ptr0: attn_part + h*G*SPLITS*(HD+2); ptr1: y + h*G*HD (rows of NQ*HD).
template <int HD, int G, int B, int NKV, int SPLITS>
__device__ void task_attention_merge(const TaskDesc& d, TaskCtx& c) {
  constexpr int kQStride = NKV * G * HD;
  constexpr int64_t kPartRow = static_cast<int64_t>(NKV) * G * SPLITS * (HD + 2);
  const float* part = dptr<const float>(d, 0);
  bf16_t* y = dptr<bf16_t>(d, 1);
  for (int u = threadIdx.x; u < B * G * HD; u += kThreads) {
    const int b = u / (G * HD), g = (u / HD) % G, i = u % HD;
    const float* ps = part + b * kPartRow + static_cast<int64_t>(g) * SPLITS * (HD + 2);
    float big = -INFINITY;
    for (int s = 0; s < SPLITS; ++s)
      if (ld_cg_f32(&ps[s * (HD + 2) + HD + 1]) > 0.f) big = fmaxf(big, ld_cg_f32(&ps[s * (HD + 2) + HD]));
    float num = 0.f, den = 0.f;
    for (int s = 0; s < SPLITS; ++s) {
      const float l = ld_cg_f32(&ps[s * (HD + 2) + HD + 1]);
      if (!(l > 0.f)) continue;  // an empty split contributes nothing
      const float w = __fmul_rn(l, exp_rn(__fsub_rn(ld_cg_f32(&ps[s * (HD + 2) + HD]), big)));
      den = __fadd_rn(den, w);
      num = __fadd_rn(num, __fmul_rn(w, ld_cg_f32(&ps[s * (HD + 2) + i])));
    }
    y[static_cast<int64_t>(b) * kQStride + g * HD + i] = f32_to_bf16(__fdiv_rn(num, den));
  }
}

}  // namespace dev
}  // namespace mpk
