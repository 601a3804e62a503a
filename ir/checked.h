// Checked integer arithmetic for sizes that come from untrusted input (modules, config.json,
// safetensors headers, trace.db rows): every product or sum of sizes goes through these, and
// an overflow becomes an mpk::Error that names the quantity instead of undefined behaviour.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>

#include "ir/error.h"

namespace mpk {

// a * b, or an Error "WHAT overflows int64 (A x B)". Both operands must be >= 0.
inline int64_t checked_mul(int64_t a, int64_t b, const std::string& what) {
  int64_t r = 0;
  if (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &r))
    throw Error(what + " overflows int64 (" + std::to_string(a) + " x " + std::to_string(b) + ")");
  return r;
}

// a + b, or an Error "WHAT overflows int64 (A + B)". Both operands must be >= 0.
inline int64_t checked_add(int64_t a, int64_t b, const std::string& what) {
  int64_t r = 0;
  if (a < 0 || b < 0 || __builtin_add_overflow(a, b, &r))
    throw Error(what + " overflows int64 (" + std::to_string(a) + " + " + std::to_string(b) + ")");
  return r;
}

// The product of non-negative factors (a shape's element count), checked.
template <typename Range>
int64_t checked_product(const Range& factors, const std::string& what) {
  int64_t r = 1;
  for (int64_t f : factors) r = checked_mul(r, f, what);
  return r;
}

inline int64_t checked_product(std::initializer_list<int64_t> factors, const std::string& what) {
  int64_t r = 1;
  for (int64_t f : factors) r = checked_mul(r, f, what);
  return r;
}

// v, if lo <= v <= hi; otherwise an Error "WHAT must be in LO..HI, got V".
inline int64_t checked_range(int64_t v, int64_t lo, int64_t hi, const std::string& what) {
  if (v < lo || v > hi)
    throw Error(what + " must be in " + std::to_string(lo) + ".." + std::to_string(hi) + ", got " +
                std::to_string(v));
  return v;
}

}  // namespace mpk
