// bf16 matrix-vector products in the canonical lane order: a scalar reference loop and
// an AVX2 version with the same summation order (see linear_simd.h).
#include "runtime/cpu/linear_simd.h"

#include "runtime/cpu/bf16.h"
#include "runtime/cpu/lane_order.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace mpk {

void linear_bf16_scalar(const float* x, int64_t rows, int64_t k, const uint16_t* w, int64_t n0,
                        int64_t n1, float* out) {
  const int64_t width = n1 - n0;
  for (int64_t b = 0; b < rows; ++b)
    for (int64_t n = n0; n < n1; ++n) {
      const uint16_t* wr = w + n * k;
      const float* xb = x + b * k;
      out[b * width + n - n0] =
          lane_reduce(k, [&](int64_t i) { return xb[i] * bf16_to_f32(wr[i]); });
    }
}

#if defined(__x86_64__)
namespace {

// One output row: lane l's 8 accumulators live in one vector; stripes of 256 elements.
__attribute__((target("avx2"))) float row_avx2(const float* xb, const uint16_t* wr, int64_t k) {
  alignas(32) float acc[kReduceLanes * kReduceChunk];
  constexpr int64_t kStripe = kReduceLanes * kReduceChunk;
  for (int l = 0; l < kReduceLanes; ++l) {
    __m256 a = _mm256_setzero_ps();
    for (int64_t i = l * kReduceChunk; i < k; i += kStripe) {
      const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(wr + i));
      const __m256 wv = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
      a = _mm256_add_ps(a, _mm256_mul_ps(_mm256_loadu_ps(xb + i), wv));
    }
    _mm256_store_ps(acc + l * kReduceChunk, a);
  }
  return lane_combine(acc);
}

}  // namespace

bool linear_bf16_simd(const float* x, int64_t rows, int64_t k, const uint16_t* w, int64_t n0,
                      int64_t n1, float* out) {
  static const bool has_avx2 = __builtin_cpu_supports("avx2");
  if (!has_avx2 || k % kReduceChunk != 0) return false;
  const int64_t width = n1 - n0;
  for (int64_t b = 0; b < rows; ++b)
    for (int64_t n = n0; n < n1; ++n) out[b * width + n - n0] = row_avx2(x + b * k, w + n * k, k);
  return true;
}
#else
bool linear_bf16_simd(const float*, int64_t, int64_t, const uint16_t*, int64_t, int64_t, float*) {
  return false;
}
#endif

}  // namespace mpk
