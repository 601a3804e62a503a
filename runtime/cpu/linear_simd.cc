// bf16 matrix-vector products: a scalar reference loop and an AVX2 version with the
// same per-row summation order (see linear_simd.h).
#include "runtime/cpu/linear_simd.h"

#include "runtime/cpu/bf16.h"

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
      float acc = 0;
      for (int64_t i = 0; i < k; ++i) acc += xb[i] * bf16_to_f32(wr[i]);
      out[b * width + n - n0] = acc;
    }
}

#if defined(__x86_64__)
namespace {

// Rows n..n+7 of W, columns kk..kk+7, as eight f32 vectors c[j] with lane r = W[n+r, kk+j].
__attribute__((target("avx2"))) inline void load_transposed(const uint16_t* const* wr, int64_t kk,
                                                            __m256* c) {
  __m256 row[8];
  for (int r = 0; r < 8; ++r) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(wr[r] + kk));
    row[r] = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
  const __m256 t0 = _mm256_unpacklo_ps(row[0], row[1]), t1 = _mm256_unpackhi_ps(row[0], row[1]);
  const __m256 t2 = _mm256_unpacklo_ps(row[2], row[3]), t3 = _mm256_unpackhi_ps(row[2], row[3]);
  const __m256 t4 = _mm256_unpacklo_ps(row[4], row[5]), t5 = _mm256_unpackhi_ps(row[4], row[5]);
  const __m256 t6 = _mm256_unpacklo_ps(row[6], row[7]), t7 = _mm256_unpackhi_ps(row[6], row[7]);
  const __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  const __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  const __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE);
  const __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  c[0] = _mm256_permute2f128_ps(s0, s4, 0x20);
  c[1] = _mm256_permute2f128_ps(s1, s5, 0x20);
  c[2] = _mm256_permute2f128_ps(s2, s6, 0x20);
  c[3] = _mm256_permute2f128_ps(s3, s7, 0x20);
  c[4] = _mm256_permute2f128_ps(s0, s4, 0x31);
  c[5] = _mm256_permute2f128_ps(s1, s5, 0x31);
  c[6] = _mm256_permute2f128_ps(s2, s6, 0x31);
  c[7] = _mm256_permute2f128_ps(s3, s7, 0x31);
}

// G groups of 8 rows starting at n, for one batch row: G independent accumulator chains.
template <int G>
__attribute__((target("avx2"))) void rows_avx2(const float* xb, int64_t k, const uint16_t* w, int64_t n,
                                               float* acc_out) {
  const uint16_t* wr[G][8];
  for (int g = 0; g < G; ++g)
    for (int r = 0; r < 8; ++r) wr[g][r] = w + (n + 8 * g + r) * k;
  __m256 acc[G];
  for (int g = 0; g < G; ++g) acc[g] = _mm256_setzero_ps();
  const int64_t k8 = k - k % 8;
  for (int64_t kk = 0; kk < k8; kk += 8) {
    for (int g = 0; g < G; ++g) {
      __m256 c[8];
      load_transposed(wr[g], kk, c);
      for (int j = 0; j < 8; ++j) acc[g] = _mm256_add_ps(acc[g], _mm256_mul_ps(_mm256_set1_ps(xb[kk + j]), c[j]));
    }
  }
  for (int g = 0; g < G; ++g) {
    float lanes[8];
    _mm256_storeu_ps(lanes, acc[g]);
    for (int r = 0; r < 8; ++r) {
      float a = lanes[r];  // the k tail continues each row's sum in order
      for (int64_t i = k8; i < k; ++i) a += xb[i] * bf16_to_f32(wr[g][r][i]);
      acc_out[8 * g + r] = a;
    }
  }
}

}  // namespace

bool linear_bf16_simd(const float* x, int64_t rows, int64_t k, const uint16_t* w, int64_t n0,
                      int64_t n1, float* out) {
  static const bool has_avx2 = __builtin_cpu_supports("avx2");
  if (!has_avx2) return false;
  const int64_t width = n1 - n0;
  for (int64_t b = 0; b < rows; ++b) {
    const float* xb = x + b * k;
    float* ob = out + b * width;
    int64_t n = n0;
    for (; n + 32 <= n1; n += 32) rows_avx2<4>(xb, k, w, n, ob + n - n0);
    for (; n + 8 <= n1; n += 8) rows_avx2<1>(xb, k, w, n, ob + n - n0);
    if (n < n1) linear_bf16_scalar(xb, 1, k, w, n, n1, ob + n - n0);
  }
  return true;
}
#else
bool linear_bf16_simd(const float*, int64_t, int64_t, const uint16_t*, int64_t, int64_t, float*) {
  return false;
}
#endif

}  // namespace mpk
