// The canonical order of long f32 reductions (dot products, sums of squares), chosen so
// that a GPU warp computes it natively and the CPU reproduces it bit for bit:
//   32 lanes; lane l keeps 8 accumulators acc[l][j] and adds the terms of elements
//   k = 256c + 8l + j for c = 0, 1, ... in order (a warp lane reads 16 bytes per c);
//   each lane sums its accumulators left to right, acc[l][0] + acc[l][1] + ... + acc[l][7];
//   the lanes then combine by a butterfly over offsets 16, 8, 4, 2, 1, where lane l
//   takes lane[l] + lane[l ^ off] (a warp's __shfl_xor_sync), and the result is lane 0.
// Terms are products of bf16 / f16 values, exact in f32, so adding a rounded product
// equals a fused multiply-add.
#pragma once

#include <cstdint>

namespace mpk {

inline constexpr int kReduceLanes = 32;
inline constexpr int kReduceChunk = 8;  // elements per lane per 256-element stripe

// Combines per-lane accumulators acc[lane * 8 + j] in the canonical order.
inline float lane_combine(const float* acc) {
  float lane[kReduceLanes];
  for (int l = 0; l < kReduceLanes; ++l) {
    float s = acc[l * kReduceChunk];
    for (int j = 1; j < kReduceChunk; ++j) s += acc[l * kReduceChunk + j];
    lane[l] = s;
  }
  for (int off = kReduceLanes / 2; off >= 1; off >>= 1) {
    float next[kReduceLanes];
    for (int l = 0; l < kReduceLanes; ++l) next[l] = lane[l] + lane[l ^ off];
    for (int l = 0; l < kReduceLanes; ++l) lane[l] = next[l];
  }
  return lane[0];
}

// sum over k < n of term(k), in the canonical order.
template <typename Term>
float lane_reduce(int64_t n, Term&& term) {
  float acc[kReduceLanes * kReduceChunk] = {};
  constexpr int64_t kStripe = kReduceLanes * kReduceChunk;
  for (int64_t base = 0; base < n; base += kStripe)
    for (int l = 0; l < kReduceLanes; ++l)
      for (int j = 0; j < kReduceChunk; ++j) {
        const int64_t k = base + l * kReduceChunk + j;
        if (k < n) acc[l * kReduceChunk + j] += term(k);
      }
  return lane_combine(acc);
}

inline float lane_dot(const float* a, const float* b, int64_t n) {
  return lane_reduce(n, [&](int64_t k) { return a[k] * b[k]; });
}

inline float lane_sum_squares(const float* a, int64_t n) {
  return lane_reduce(n, [&](int64_t k) { return a[k] * a[k]; });
}

}  // namespace mpk
