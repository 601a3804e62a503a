// Greedy sampling: argmax_partial finds the largest logit and its lowest index over a
// slice of the vocabulary, argmax_reduce combines the partials into the next token,
// writes it to `tokens` (read by the next step's embedding) and to the token history
// that the host copies back. Ties go to the lowest index; no atomics.
#pragma once

#include <cstdint>

#include "runtime/device/common.cuh"
#include "runtime/device/context.cuh"
#include "runtime/device/remote.cuh"

namespace mpk {
namespace dev {

// Block-wide (value, index) maximum; thread 0 holds the result. `red` holds 2*kWarps words.
__device__ __forceinline__ void block_argmax(float& v, int32_t& i, unsigned char* red) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float ov = __shfl_xor_sync(0xffffffffu, v, o);
    const int32_t oi = __shfl_xor_sync(0xffffffffu, i, o);
    argmax_combine(v, i, ov, oi);
  }
  float* rv = reinterpret_cast<float*>(red);
  int32_t* ri = reinterpret_cast<int32_t*>(red) + kWarps;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  if (lane == 0) {
    rv[warp] = v;
    ri[warp] = i;
  }
  body_sync();
  if (threadIdx.x == 0) {
    for (int w = 1; w < kWarps; ++w) argmax_combine(v, i, rv[w], ri[w]);
  }
  body_sync();
}

// slots::ArgmaxPartial: logits + v0 (f32, rows of VSTRIDE), argmax_val + p, argmax_idx
// + p (rows of NP).
template <int COLS, int B, int VSTRIDE, int NP>
__device__ void task_argmax_partial(const TaskDesc& d, TaskCtx& c) {
  using Slot = slots::ArgmaxPartial;
  const float* logits = dptr<const float>(d, Slot::kLogits);
  float* val = dptr<float>(d, Slot::kVal);
  int32_t* idx = dptr<int32_t>(d, Slot::kIdx);
  const int32_t v0 = arg_int(d, Slot::kFirstRow);
#pragma unroll 1
  for (int b = 0; b < B; ++b) {
    float bv = -INFINITY;  // a range of NaN / -inf gives (-inf, v0), as on the CPU
    int32_t bi = v0;
    for (int j = threadIdx.x; j < COLS; j += kThreads)
      argmax_combine(bv, bi, ld_cg_f32(&logits[static_cast<int64_t>(b) * VSTRIDE + j]), v0 + j);
    block_argmax(bv, bi, c.scratch);
    if (threadIdx.x == 0) {
      val[b * NP] = bv;
      idx[b * NP] = bi;
    }
  }
}

// slots::ArgmaxReduce: argmax_val, argmax_idx ([B, NP]), tokens [B]. Also writes
// token_history[step]. VSHARD > 0: a vocab-parallel argmax (docs/ir.md "Tensor
// parallel"): every rank's partials, read at system scope through the peer deltas, rank
// q's indices offset by q * VSHARD (the logits columns of one rank).
template <int NP, int B, int VSHARD = 0>
__device__ void task_argmax_reduce(const TaskDesc& d, TaskCtx& c) {
  using Slot = slots::ArgmaxReduce;
  const float* val = dptr<const float>(d, Slot::kVal);
  const int32_t* idx = dptr<const int32_t>(d, Slot::kIdx);
  int32_t* tokens = dptr<int32_t>(d, Slot::kTokens);
  const KernelParams& p = *c.params;
#pragma unroll 1
  for (int b = 0; b < B; ++b) {
    float bv = -INFINITY;
    int32_t bi = 0x7fffffff;
    if constexpr (VSHARD > 0) {
      for (int q = 0; q < p.ranks; ++q)
        for (int j = threadIdx.x; j < NP; j += kThreads) {
          const int64_t at = static_cast<int64_t>(b) * NP + j;
          const float v = __uint_as_float(ld_relaxed_sys_u32(reinterpret_cast<const char*>(&val[at]) + p.peer_delta[q]));
          const auto i = static_cast<int32_t>(ld_relaxed_sys_u32(reinterpret_cast<const char*>(&idx[at]) + p.peer_delta[q]));
          argmax_combine(bv, bi, v, i + q * VSHARD);
        }
    } else {
      for (int j = threadIdx.x; j < NP; j += kThreads)
        argmax_combine(bv, bi, ld_cg_f32(&val[b * NP + j]), ld_cg_i32(&idx[b * NP + j]));
    }
    block_argmax(bv, bi, c.scratch);
    if (threadIdx.x == 0) {
      tokens[b] = bi;
      if (p.token_history != nullptr) p.token_history[static_cast<int64_t>(c.step) * B + b] = bi;
    }
  }
}

}  // namespace dev
}  // namespace mpk
