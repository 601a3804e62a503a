// FNV-1a, 64-bit: the one byte hash behind mpk's digests and keys (trace.db's graph
// digest, the megakernel cubin cache key, random weights' per-tensor seeds, the tests'
// task-table fingerprints). Values are persisted or compared across builds: the
// algorithm and the byte order of what callers feed must not change.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace mpk {

// The standard offset basis, and the one mpk's first digests were written with (the
// standard's first 19 digits): trace.db's graph digest and the recorded task-table
// fingerprints keep it, so that stored values stay comparable.
inline constexpr uint64_t kFnvOffset = 14695981039346656037ull;
inline constexpr uint64_t kFnvTruncatedOffset = 1469598103934665603ull;

class Fnv1a {
 public:
  explicit Fnv1a(uint64_t basis = kFnvOffset) : h_(basis) {}
  Fnv1a& bytes(const void* p, size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (size_t i = 0; i < n; ++i) h_ = (h_ ^ b[i]) * 1099511628211ull;
    return *this;
  }
  Fnv1a& text(std::string_view s) { return bytes(s.data(), s.size()); }  // no length
  Fnv1a& value(int64_t v) { return bytes(&v, sizeof v); }
  Fnv1a& sized(std::string_view s) { return value(static_cast<int64_t>(s.size())).text(s); }
  uint64_t get() const { return h_; }
  // 16 lower-case hex digits.
  std::string hex() const {
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h_));
    return buf;
  }

 private:
  uint64_t h_;
};

}  // namespace mpk
