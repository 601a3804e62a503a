// Decode attention with grouped-query heads. One task serves the G = nq/nkv query heads
// of one KV head h over positions [t0, t1) of the cache (t1 <= pos + 1). A group of
// HD/8 lanes owns one position at a time (16-byte loads of k and v), keeping an online
// softmax state (max m, sum l, unnormalized output) per query head; the groups' states
// are then merged in group order in shared memory. The merge of several partial tasks
// (attention_partial -> attention_merge) follows docs/ir.md exactly: M = max m_s,
// w_s = l_s exp(m_s - M), y = sum_s w_s o_s / sum_s w_s in split order.
#pragma once

#include <cstdint>

#include "runtime/device/common.cuh"
#include "runtime/device/context.cuh"
#include "runtime/device/tasks_elementwise.cuh"

namespace mpk {
namespace dev {

template <int HD, int G>
struct AttnShape {
  static_assert(HD % 8 == 0, "attention: head_dim must be a multiple of 8");
  static constexpr int kLpp = HD / 8;  // lanes per position
  static_assert(kLpp <= 32 && (kLpp & (kLpp - 1)) == 0, "attention: head_dim/8 must be a power of two <= 32");
  static constexpr int kGpw = 32 / kLpp;         // position groups per warp
  static constexpr int kGroups = kWarps * kGpw;  // position groups per block
  static constexpr int kStateFloats = HD + 2;    // acc[HD], m, l
  static constexpr int kBytes = (kGroups * G * kStateFloats + G + kGroups * G) * 4;
};

// Attends the G heads of batch row b over [t0, t1). Calls out(g, i, o_i, m, l) for each
// head g and element i, o normalized (0 when the range is empty, with m = -inf, l = 0).
template <int HD, int G, int S, int NKV, int QSTRIDE, class Out>
__device__ __forceinline__ void attend(const bf16_t* q, const bf16_t* kc, const bf16_t* vc, int b,
                                       int t0, int t1, float scale, unsigned char* scratch, Out out) {
  using Sh = AttnShape<HD, G>;
  constexpr int kLpp = Sh::kLpp;
  constexpr int kUnroll = 4;
  float* state = reinterpret_cast<float*>(scratch);  // [kGroups][G][HD + 2]
  float* gmax = state + Sh::kGroups * G * Sh::kStateFloats;
  float* wts = gmax + G;  // [G][kGroups]
  const int lane = threadIdx.x & 31;
  const int grp = (threadIdx.x >> 5) * Sh::kGpw + lane / kLpp;  // position group
  const int sl = lane % kLpp;

  float qf[G][8];
#pragma unroll
  for (int g = 0; g < G; ++g) {
    const uint4 v = ld_cg_v4(q + static_cast<int64_t>(b) * QSTRIDE + g * HD + sl * 8);
    unpack8(v, qf[g]);
  }
  float m[G], l[G], acc[G][8];
#pragma unroll
  for (int g = 0; g < G; ++g) {
    m[g] = -INFINITY;
    l[g] = 0.f;
#pragma unroll
    for (int e = 0; e < 8; ++e) acc[g][e] = 0.f;
  }
  const int64_t row0 = static_cast<int64_t>(b) * S * NKV * HD + sl * 8;
  // The loop bound is uniform per warp (its first group's position), so the shuffles
  // below always run with the whole warp.
  const int warp_first = t0 + (threadIdx.x >> 5) * Sh::kGpw;
  const int in_warp = lane / kLpp;
#pragma unroll 1
  for (int tw = warp_first; tw < t1; tw += Sh::kGroups * kUnroll) {
    uint4 kv[kUnroll], vv[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int t = tw + in_warp + u * Sh::kGroups;
      kv[u] = make_uint4(0u, 0u, 0u, 0u);
      vv[u] = kv[u];
      if (t < t1) {
        kv[u] = ld_cg_v4(kc + row0 + static_cast<int64_t>(t) * NKV * HD);
        vv[u] = ld_cg_v4(vc + row0 + static_cast<int64_t>(t) * NKV * HD);
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const bool valid = tw + in_warp + u * Sh::kGroups < t1;
      float kf[8], vf[8];
      unpack8(kv[u], kf);
      unpack8(vv[u], vf);
#pragma unroll
      for (int g = 0; g < G; ++g) {
        float s = 0.f;
#pragma unroll
        for (int e = 0; e < 8; ++e) s = fmaf(qf[g][e], kf[e], s);
#pragma unroll
        for (int o = kLpp / 2; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
        if (valid) {
          s *= scale;
          const float mn = fmaxf(m[g], s);
          const float corr = expf(m[g] - mn);
          const float pr = expf(s - mn);
          l[g] = l[g] * corr + pr;
#pragma unroll
          for (int e = 0; e < 8; ++e) acc[g][e] = acc[g][e] * corr + pr * vf[e];
          m[g] = mn;
        }
      }
    }
  }
  // Publish each group's state, then merge the groups in order.
#pragma unroll
  for (int g = 0; g < G; ++g) {
    float* st = state + (grp * G + g) * Sh::kStateFloats;
#pragma unroll
    for (int e = 0; e < 8; ++e) st[sl * 8 + e] = acc[g][e];
    if (sl == 0) {
      st[HD] = m[g];
      st[HD + 1] = l[g];
    }
  }
  __syncthreads();
  if (threadIdx.x < G) {
    float mx = -INFINITY;
    for (int r = 0; r < Sh::kGroups; ++r)
      mx = fmaxf(mx, state[(r * G + threadIdx.x) * Sh::kStateFloats + HD]);
    gmax[threadIdx.x] = mx;
  }
  __syncthreads();
  for (int u = threadIdx.x; u < G * Sh::kGroups; u += kThreads) {
    const int g = u / Sh::kGroups, r = u % Sh::kGroups;
    const float mr = state[(r * G + g) * Sh::kStateFloats + HD];
    wts[u] = mr == -INFINITY ? 0.f : expf(mr - gmax[g]);
  }
  __syncthreads();
  for (int u = threadIdx.x; u < G * HD; u += kThreads) {
    const int g = u / HD, i = u % HD;
    float num = 0.f, den = 0.f;
    for (int r = 0; r < Sh::kGroups; ++r) {
      const float* st = state + (r * G + g) * Sh::kStateFloats;
      const float w = wts[g * Sh::kGroups + r];
      num += w * st[i];
      den += w * st[HD + 1];
    }
    out(g, i, den > 0.f ? num / den : 0.f, gmax[g], den);
  }
  __syncthreads();
}

// ptr: q + h*G*HD (rows of NQ*HD), k_cache + h*HD, v_cache + h*HD, y + h*G*HD.
// arg0: scale (f32 bits). Positions [0, pos].
template <int HD, int G, int B, int S, int NKV>
__device__ void task_attention(const TaskDesc& d, TaskCtx& c) {
  static_assert(AttnShape<HD, G>::kBytes <= kScratchBytes, "attention: scratch too small");
  constexpr int kQStride = NKV * G * HD;
  const bf16_t* q = dptr<const bf16_t>(d, 0);
  bf16_t* y = dptr<bf16_t>(d, 3);
  const int t1 = c.step + 1 < S ? c.step + 1 : S;
#pragma unroll 1
  for (int b = 0; b < B; ++b) {
    attend<HD, G, S, NKV, kQStride>(
        q, dptr<const bf16_t>(d, 1), dptr<const bf16_t>(d, 2), b, 0, t1, arg_float(d, 0), c.scratch,
        [&](int g, int i, float o, float, float) {
          y[static_cast<int64_t>(b) * kQStride + g * HD + i] = f32_to_bf16(o);
        });
  }
}

// As task_attention over [s0, s1) ∩ [0, pos]; ptr3: attn_part + (h*G*SPLITS + s)*(HD+2)
// of attn_part [B, NQ, SPLITS, HD+2] (f32). arg0: scale, arg1: s0, arg2: s1.
template <int HD, int G, int B, int S, int NKV, int SPLITS>
__device__ void task_attention_partial(const TaskDesc& d, TaskCtx& c) {
  static_assert(AttnShape<HD, G>::kBytes <= kScratchBytes, "attention: scratch too small");
  constexpr int kQStride = NKV * G * HD;
  constexpr int64_t kPartRow = static_cast<int64_t>(NKV) * G * SPLITS * (HD + 2);
  const bf16_t* q = dptr<const bf16_t>(d, 0);
  float* part = dptr<float>(d, 3);
  const int s0 = d.arg[1];
  const int s1 = min(d.arg[2], c.step + 1);
#pragma unroll 1
  for (int b = 0; b < B; ++b) {
    attend<HD, G, S, NKV, kQStride>(
        q, dptr<const bf16_t>(d, 1), dptr<const bf16_t>(d, 2), b, s0, s1 > s0 ? s1 : s0,
        arg_float(d, 0), c.scratch, [&](int g, int i, float o, float m, float l) {
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
    float mx = -INFINITY;
    for (int s = 0; s < SPLITS; ++s) mx = fmaxf(mx, ld_cg_f32(&ps[s * (HD + 2) + HD]));
    float num = 0.f, den = 0.f;
    for (int s = 0; s < SPLITS; ++s) {
      const float ms = ld_cg_f32(&ps[s * (HD + 2) + HD]);
      if (ms == -INFINITY) continue;
      const float w = ld_cg_f32(&ps[s * (HD + 2) + HD + 1]) * expf(ms - mx);
      num += w * ld_cg_f32(&ps[s * (HD + 2) + i]);
      den += w;
    }
    y[static_cast<int64_t>(b) * kQStride + g * HD + i] = f32_to_bf16(den > 0.f ? num / den : 0.f);
  }
}

}  // namespace dev
}  // namespace mpk
