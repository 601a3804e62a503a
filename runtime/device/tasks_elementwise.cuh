// Task bodies of the light operators: embedding, RMSNorm, per-head q/k RMSNorm, RoPE,
// KV-cache append, SiLU-and-multiply and residual add. Shapes are template parameters;
// descriptor pointers are pre-offset to the task's region (column c0, head h...), and
// every row stride is a compile-time constant. All arithmetic in f32, stores to bf16
// round to nearest even, every reduction in one fixed order (docs/ir.md).
#pragma once

#include <cstdint>

#include "runtime/device/common.cuh"
#include "runtime/device/context.cuh"

namespace mpk {
namespace dev {

template <class T>
__device__ __forceinline__ T* dptr(const TaskDesc& d, int i) {
  return reinterpret_cast<T*>(d.ptr[i]);
}

__device__ __forceinline__ float arg_float(const TaskDesc& d, int i) {
  return __int_as_float(d.arg[i]);
}

// ptr: table + c0 (row stride H), tokens, y + c0 (row stride H). arg0: vocab.
template <int COLS, int H, int B>
__device__ void task_embedding(const TaskDesc& d, TaskCtx& c) {
  const bf16_t* table = dptr<const bf16_t>(d, 0);
  const int32_t* tokens = dptr<const int32_t>(d, 1);
  bf16_t* y = dptr<bf16_t>(d, 2);
  const KernelParams& p = *c.params;
  const int32_t vocab = d.arg[0];
#pragma unroll 1
  for (int b = 0; b < B; ++b) {
    int32_t tok = c.step < p.prompt_len ? p.prompt[c.step] : ld_cg_i32(&tokens[b]);
    tok = tok < 0 ? 0 : (tok >= vocab ? vocab - 1 : tok);  // never read out of bounds
    const bf16_t* row = table + static_cast<int64_t>(tok) * H;
    for (int i = threadIdx.x; i < COLS; i += kThreads) y[b * H + i] = ld_const_bf16(&row[i]);
  }
}

// ptr: x, w, y (whole rows of H). arg0: eps (f32 bits).
template <int H, int B>
__device__ void task_rms_norm(const TaskDesc& d, TaskCtx& c) {
  constexpr int kPer = (H + kThreads - 1) / kThreads;
  const bf16_t* x = dptr<const bf16_t>(d, 0);
  const bf16_t* w = dptr<const bf16_t>(d, 1);
  bf16_t* y = dptr<bf16_t>(d, 2);
  const float eps = arg_float(d, 0);
  float* red = reinterpret_cast<float*>(c.scratch);
#pragma unroll 1
  for (int b = 0; b < B; ++b) {
    float xv[kPer];
    float ss = 0.f;
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
      const int i = threadIdx.x + j * kThreads;
      xv[j] = i < H ? bf16_to_f32(ld_cg_bf16(&x[b * H + i])) : 0.f;
      ss += xv[j] * xv[j];
    }
    ss = block_sum(ss, red);
    const float r = 1.0f / sqrtf(ss / static_cast<float>(H) + eps);
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
      const int i = threadIdx.x + j * kThreads;
      if (i < H) y[b * H + i] = f32_to_bf16(xv[j] * r * bf16_to_f32(ld_const_bf16(&w[i])));
    }
  }
}

// ptr: x + a, w, y + a; NH whole heads of HD; rows of STRIDE. arg0: eps.
template <int HD, int NH, int B, int STRIDE>
__device__ void task_qk_norm(const TaskDesc& d, TaskCtx& c) {
  constexpr int kPer = (HD + 31) / 32;
  const bf16_t* x = dptr<const bf16_t>(d, 0);
  const bf16_t* w = dptr<const bf16_t>(d, 1);
  bf16_t* y = dptr<bf16_t>(d, 2);
  const float eps = arg_float(d, 0);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  for (int u = warp; u < B * NH; u += kWarps) {
    const int b = u / NH, h = u % NH;
    const int64_t base = static_cast<int64_t>(b) * STRIDE + h * HD;
    float xv[kPer];
    float ss = 0.f;
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
      const int i = lane + 32 * j;
      xv[j] = i < HD ? bf16_to_f32(ld_cg_bf16(&x[base + i])) : 0.f;
      ss += xv[j] * xv[j];
    }
    ss = warp_sum(ss);
    const float r = 1.0f / sqrtf(ss / static_cast<float>(HD) + eps);
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
      const int i = lane + 32 * j;
      if (i < HD) y[base + i] = f32_to_bf16(xv[j] * r * bf16_to_f32(ld_const_bf16(&w[i])));
    }
  }
}

// ptr: x + a, y + a; NH whole heads. inv_freq: HD/2 inverse frequencies.
template <int HD, int NH, int B, int STRIDE>
__device__ void task_rope(const TaskDesc& d, TaskCtx& c, const float* inv_freq) {
  constexpr int kHalf = HD / 2;
  const bf16_t* x = dptr<const bf16_t>(d, 0);
  bf16_t* y = dptr<bf16_t>(d, 1);
  const float pos = static_cast<float>(c.step);
  for (int u = threadIdx.x; u < B * NH * kHalf; u += kThreads) {
    const int i = u % kHalf;
    const int h = (u / kHalf) % NH;
    const int b = u / (kHalf * NH);
    const int64_t base = static_cast<int64_t>(b) * STRIDE + h * HD;
    // As the CPU executor: an f32 angle, cos and sin in double rounded to f32.
    const float a = pos * inv_freq[i];
    const float cs = static_cast<float>(cos(static_cast<double>(a)));
    const float sn = static_cast<float>(sin(static_cast<double>(a)));
    const float x0 = bf16_to_f32(ld_cg_bf16(&x[base + i]));
    const float x1 = bf16_to_f32(ld_cg_bf16(&x[base + i + kHalf]));
    y[base + i] = f32_to_bf16(x0 * cs - x1 * sn);
    y[base + i + kHalf] = f32_to_bf16(x1 * cs + x0 * sn);
  }
}

// ptr: k + h*HD, v + h*HD (rows of NKV*HD), k_cache + h*HD, v_cache + h*HD
// ([B, S, NKV, HD]). Writes position `step`.
template <int HD, int B, int S, int NKV>
__device__ void task_kv_append(const TaskDesc& d, TaskCtx& c) {
  const bf16_t* k = dptr<const bf16_t>(d, 0);
  const bf16_t* v = dptr<const bf16_t>(d, 1);
  bf16_t* kc = dptr<bf16_t>(d, 2);
  bf16_t* vc = dptr<bf16_t>(d, 3);
  const int pos = c.step;
  if (pos >= S) return;  // the host never runs past max_seq_len; stay in bounds anyway
  for (int u = threadIdx.x; u < B * HD; u += kThreads) {
    const int b = u / HD, i = u % HD;
    const int64_t dst = (static_cast<int64_t>(b) * S + pos) * NKV * HD + i;
    kc[dst] = ld_cg_bf16(&k[b * NKV * HD + i]);
    vc[dst] = ld_cg_bf16(&v[b * NKV * HD + i]);
  }
}

// ptr: g + c0, u + c0, y + c0 (rows of STRIDE).
template <int COLS, int B, int STRIDE>
__device__ void task_silu_mul(const TaskDesc& d, TaskCtx& c) {
  const bf16_t* g = dptr<const bf16_t>(d, 0);
  const bf16_t* u = dptr<const bf16_t>(d, 1);
  bf16_t* y = dptr<bf16_t>(d, 2);
  for (int e = threadIdx.x; e < B * COLS; e += kThreads) {
    const int64_t o = static_cast<int64_t>(e / COLS) * STRIDE + e % COLS;
    const float gv = bf16_to_f32(ld_cg_bf16(&g[o]));
    const float uv = bf16_to_f32(ld_cg_bf16(&u[o]));
    y[o] = f32_to_bf16(gv / (1.0f + expf(-gv)) * uv);
  }
}

// ptr: a + c0, b + c0, y + c0 (rows of STRIDE).
template <int COLS, int B, int STRIDE>
__device__ void task_residual_add(const TaskDesc& d, TaskCtx& c) {
  const bf16_t* a = dptr<const bf16_t>(d, 0);
  const bf16_t* bb = dptr<const bf16_t>(d, 1);
  bf16_t* y = dptr<bf16_t>(d, 2);
  for (int e = threadIdx.x; e < B * COLS; e += kThreads) {
    const int64_t o = static_cast<int64_t>(e / COLS) * STRIDE + e % COLS;
    y[o] = f32_to_bf16(bf16_to_f32(ld_cg_bf16(&a[o])) + bf16_to_f32(ld_cg_bf16(&bb[o])));
  }
}

}  // namespace dev
}  // namespace mpk
