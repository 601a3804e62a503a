// Task bodies of the light operators: embedding, RMSNorm, per-head q/k RMSNorm, RoPE,
// KV-cache append, SiLU-and-multiply and residual add. Shapes are template parameters;
// descriptor pointers are pre-offset to the task's region (column c0, head h...), and
// every row stride is a compile-time constant. All arithmetic in f32, stores to bf16
// round to nearest even, and every operation in the CPU executor's order (docs/ir.md,
// runtime/cpu/numerics.h): sums ascending from 0 in one chain, products rounded
// separately from sums where they are not exact (__fmul_rn / __fadd_rn are never
// contracted), exp correctly rounded through double, cos / sin in double.
#pragma once

#include <cstdint>

#include "runtime/device/common.cuh"
#include "runtime/device/context.cuh"
#include "runtime/device/heads.cuh"
#include "runtime/device/lane_order.cuh"

namespace mpk {
namespace dev {

// slots::Embedding (rows of H).
template <int COLS, int H, int B>
__device__ void task_embedding(const TaskDesc& d, TaskCtx& c) {
  using Slot = slots::Embedding;
  const bf16_t* table = dptr<const bf16_t>(d, Slot::kTable);
  const int32_t* tokens = dptr<const int32_t>(d, Slot::kTokens);
  bf16_t* y = dptr<bf16_t>(d, Slot::kY);
  const KernelParams& p = *c.params;
  const int32_t vocab = arg_int(d, Slot::kVocab);
#pragma unroll 1
  for (int b = 0; b < B; ++b) {
    int32_t tok = c.step < p.prompt_len ? p.prompt[c.step] : ld_cg_i32(&tokens[b]);
    tok = tok < 0 ? 0 : (tok >= vocab ? vocab - 1 : tok);  // never read out of bounds
    const bf16_t* row = table + static_cast<int64_t>(tok) * H;
    #pragma unroll 4
    for (int i = threadIdx.x; i < COLS; i += kThreads) y[b * H + i] = ld_const_bf16(&row[i]);
  }
}

template <int H>
struct RmsNormScratch {
  static constexpr int kBytes = ((H * 2 + 15) / 16) * 16 + 16;
};

// slots::Norm (whole rows of H). Thread 0 adds the squares of a row in order; then
// every thread scales its elements.
template <int H, int B>
__device__ void task_rms_norm(const TaskDesc& d, TaskCtx& c) {
  static_assert(H % 8 == 0, "rms_norm: H must be a multiple of 8");
  static_assert(RmsNormScratch<H>::kBytes <= kScratchBytes, "rms_norm: scratch too small");
  using Slot = slots::Norm;
  const bf16_t* x = dptr<const bf16_t>(d, Slot::kX);
  const bf16_t* w = dptr<const bf16_t>(d, Slot::kW);
  bf16_t* y = dptr<bf16_t>(d, Slot::kY);
  const float eps = arg_float(d, Slot::kEps);
  constexpr int kPer = (H + kThreads - 1) / kThreads;
  bf16_t* xs = reinterpret_cast<bf16_t*>(c.scratch);
  float* rs = reinterpret_cast<float*>(c.scratch + ((H * 2 + 15) / 16) * 16);
  float wv[kPer];  // this thread's weights, loaded together
#pragma unroll
  for (int j = 0; j < kPer; ++j) {
    const int i = threadIdx.x + j * kThreads;
    wv[j] = i < H ? bf16_to_f32(ld_const_bf16(&w[i])) : 0.f;
  }
#pragma unroll 1
  for (int b = 0; b < B; ++b) {
#pragma unroll
    for (int i = threadIdx.x; i < H / 8; i += kThreads)
      reinterpret_cast<uint4*>(xs)[i] = ld_cg_v4(x + static_cast<int64_t>(b) * H + i * 8);
    body_sync();
    if (threadIdx.x < 32) {  // one warp, in the canonical reduction order
      const float ss = warp_sum_squares<H>(xs, threadIdx.x);
      if (threadIdx.x == 0) *rs = rms_scale(ss, H, eps);
    }
    body_sync();
    const float r = *rs;
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
      const int i = threadIdx.x + j * kThreads;
      if (i < H) y[static_cast<int64_t>(b) * H + i] = f32_to_bf16(__fmul_rn(__fmul_rn(bf16_to_f32(xs[i]), r), wv[j]));
    }
    body_sync();
  }
}

// slots::Norm: NH whole heads of HD; rows of STRIDE. One thread per (row, head) adds
// that head's squares in order.
template <int HD, int NH, int B, int STRIDE>
__device__ void task_qk_norm(const TaskDesc& d, TaskCtx& c) {
  static_assert(HD % 8 == 0, "qk_norm: head_dim must be a multiple of 8");
  using Slot = slots::Norm;
  const bf16_t* x = dptr<const bf16_t>(d, Slot::kX);
  const bf16_t* w = dptr<const bf16_t>(d, Slot::kW);
  bf16_t* y = dptr<bf16_t>(d, Slot::kY);
  const float eps = arg_float(d, Slot::kEps);
  for (int u = threadIdx.x; u < B * NH; u += kThreads) {
    const int b = u / NH, h = u % NH;
    const int64_t base = static_cast<int64_t>(b) * STRIDE + h * HD;
    uint4 xv[HD / 8];  // the head, loaded at once (y may alias x)
#pragma unroll
    for (int i = 0; i < HD / 8; ++i) xv[i] = ld_cg_v4(x + base + i * 8);
    const float r = head_rms_scale<HD>([&](int i) { return bf16_at(xv[i / 8], i % 8); }, eps);
#pragma unroll
    for (int i = 0; i < HD / 8; ++i) {
      float f[8], wf[8];
      unpack8(xv[i], f);
      unpack8(__ldg(reinterpret_cast<const uint4*>(w + i * 8)), wf);
      uint32_t out[4];
#pragma unroll
      for (int e = 0; e < 8; e += 2)
        out[e / 2] = static_cast<uint32_t>(f32_to_bf16(normed(f[e], r, wf[e]))) |
                     (static_cast<uint32_t>(f32_to_bf16(normed(f[e + 1], r, wf[e + 1]))) << 16);
      *reinterpret_cast<uint4*>(y + base + i * 8) = make_uint4(out[0], out[1], out[2], out[3]);
    }
  }
}

// slots::Rope (the table [S][HD/2]); NH whole heads.
template <int HD, int NH, int B, int STRIDE, int S>
__device__ void task_rope(const TaskDesc& d, TaskCtx& c) {
  constexpr int kHalf = HD / 2;
  using Slot = slots::Rope;
  const bf16_t* x = dptr<const bf16_t>(d, Slot::kX);
  bf16_t* y = dptr<bf16_t>(d, Slot::kY);
  const float2* cs_sn = dptr<const float2>(d, Slot::kTable) + static_cast<int64_t>(min(c.step, S - 1)) * kHalf;
  constexpr int kItems = B * NH * kHalf;
  constexpr int kPer = (kItems + kThreads - 1) / kThreads;
  // Every load first (y may alias x), then the rotations.
  float x0[kPer], x1[kPer];
  float2 t[kPer];
#pragma unroll
  for (int j = 0; j < kPer; ++j) {
    const int u = threadIdx.x + j * kThreads;
    if (u < kItems) {
      const int i = u % kHalf, h = (u / kHalf) % NH, b = u / (kHalf * NH);
      const int64_t base = static_cast<int64_t>(b) * STRIDE + h * HD;
      x0[j] = bf16_to_f32(ld_cg_bf16(&x[base + i]));
      x1[j] = bf16_to_f32(ld_cg_bf16(&x[base + i + kHalf]));
      t[j] = __ldg(&cs_sn[i]);
    }
  }
#pragma unroll
  for (int j = 0; j < kPer; ++j) {
    const int u = threadIdx.x + j * kThreads;
    if (u < kItems) {
      const int i = u % kHalf, h = (u / kHalf) % NH, b = u / (kHalf * NH);
      const int64_t base = static_cast<int64_t>(b) * STRIDE + h * HD;
      rope_rotate(x0[j], x1[j], t[j], y[base + i], y[base + i + kHalf]);
    }
  }
}

// slots::KvAppend: k and v rows of NKV*HD, caches [B, S, NKV, HD]. Writes position
// `step`. ROPE: k is roped first (the RoPE table), after a k norm when EPS_BITS != 0
// (its weight) — a kv_append of a fused attention operator, or one made by fuse-rope.
template <int HD, int B, int S, int NKV, int ROPE, int EPS_BITS>
__device__ void task_kv_append(const TaskDesc& d, TaskCtx& c) {
  using Slot = slots::KvAppend;
  const bf16_t* k = dptr<const bf16_t>(d, Slot::kK);
  const bf16_t* v = dptr<const bf16_t>(d, Slot::kV);
  bf16_t* kc = dptr<bf16_t>(d, Slot::kKCache);
  bf16_t* vc = dptr<bf16_t>(d, Slot::kVCache);
  const int pos = c.step;
  if constexpr (ROPE) {
    const HeadIo io{nullptr, k, v, nullptr, dptr<const bf16_t>(d, Slot::kKNorm), dptr<const float2>(d, Slot::kRopeTable),
                    kc, vc, 0, NKV * HD};
#pragma unroll 1
    for (int b = 0; b < B; ++b) {
      HeadPrep<HD, 0, S, NKV, EPS_BITS, true> prep;
      prep.issue(io, b, pos);
      prep.finish(io, b, pos, nullptr, c.scratch);
    }
  } else {
    if (pos >= S) return;  // the host never runs past max_seq_len; stay in bounds anyway
#pragma unroll 4
    for (int u = threadIdx.x; u < B * HD; u += kThreads) {
      const int b = u / HD, i = u % HD;
      const int64_t dst = (static_cast<int64_t>(b) * S + pos) * NKV * HD + i;
      kc[dst] = ld_cg_bf16(&k[b * NKV * HD + i]);
      vc[dst] = ld_cg_bf16(&v[b * NKV * HD + i]);
    }
  }
}

// y = f(a, b) elementwise over COLS columns of B rows of STRIDE (slots::Binary).
template <int COLS, int B, int STRIDE, class F>
__device__ __forceinline__ void binary_elementwise(const TaskDesc& d, F f) {
  using Slot = slots::Binary;
  const bf16_t* a = dptr<const bf16_t>(d, Slot::kA);
  const bf16_t* bb = dptr<const bf16_t>(d, Slot::kB);
  bf16_t* y = dptr<bf16_t>(d, Slot::kY);
  #pragma unroll 4
  for (int e = threadIdx.x; e < B * COLS; e += kThreads) {
    const int64_t o = static_cast<int64_t>(e / COLS) * STRIDE + e % COLS;
    y[o] = f32_to_bf16(f(bf16_to_f32(ld_cg_bf16(&a[o])), bf16_to_f32(ld_cg_bf16(&bb[o]))));
  }
}

// silu(g) * u = g / (1 + exp(-g)) * u, as the CPU rounds it.
__device__ __forceinline__ float silu_mul(float g, float u) {
  return __fmul_rn(__fdiv_rn(g, __fadd_rn(1.0f, exp_rn(-g))), u);
}

// ptr: g + c0, u + c0, y + c0 (rows of STRIDE).
template <int COLS, int B, int STRIDE>
__device__ void task_silu_mul(const TaskDesc& d, TaskCtx& c) {
  binary_elementwise<COLS, B, STRIDE>(d, silu_mul);
}

// ptr: a + c0, b + c0, y + c0 (rows of STRIDE).
template <int COLS, int B, int STRIDE>
__device__ void task_residual_add(const TaskDesc& d, TaskCtx& c) {
  binary_elementwise<COLS, B, STRIDE>(d, [](float a, float b) { return __fadd_rn(a, b); });
}

}  // namespace dev
}  // namespace mpk
