// The hot loop of linear / lm_head tasks for bf16 weights: y[b, n] = sum_k x[b, k] *
// W[n, k] in f32, in the canonical lane order of lane_order.h (the order a GPU warp
// uses). The AVX2 path holds one lane's 8 accumulators in one vector, so scalar and SIMD
// results are bit-identical on any CPU.
#pragma once

#include <cstdint>

namespace mpk {

// out[b * (n1 - n0) + (n - n0)] for b < rows, n0 <= n < n1; x is rows x k f32.
void linear_bf16_scalar(const float* x, int64_t rows, int64_t k, const uint16_t* w, int64_t n0,
                        int64_t n1, float* out);
// Same result; returns false (computing nothing) when the CPU has no AVX2 or k is not a
// multiple of 8.
bool linear_bf16_simd(const float* x, int64_t rows, int64_t k, const uint16_t* w, int64_t n0,
                      int64_t n1, float* out);

}  // namespace mpk
