// Where the rows of a step sit in their sequences (docs/ir.md, "Prefill chunks"): row r
// of step s is chunk row r % C of sequence r / C, at position min(s*C + r % C, E - 1),
// and stores to the KV caches only when s*C + r % C < E. A decode step is C = 1 with no
// end: every row at position s. The one statement of the rule on the host; the GPU's is
// runtime/device's.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <utility>

#include "ir/attrs.h"
#include "ir/module.h"

namespace mpk {

struct RowPositions {
  int64_t step = 0;
  int64_t chunk = 1;                                   // C: rows per sequence
  int64_t end = std::numeric_limits<int64_t>::max();  // E: the positions a prefill fills

  int64_t unclamped(int64_t row) const { return step * chunk + row % chunk; }
  int64_t pos(int64_t row) const { return std::min(unclamped(row), end - 1); }
  int64_t seq(int64_t row) const { return row / chunk; }
  bool stores(int64_t row) const { return unclamped(row) < end; }
  // The positions [lo, hi) of split `split` of `splits` attention partials over a cache
  // of S positions: those up to the step's (chunk's) last, [0, min(step*C + C, S)), in
  // parts of the ceiling of their count over `splits` rounded up to 16, at most
  // ceil(S / splits) (docs/ir.md "Attention").
  std::pair<int64_t, int64_t> attention_split(int64_t split, int64_t splits, int64_t S) const {
    const int64_t span = std::min(step * chunk + chunk, S);
    const int64_t len = std::min((span + 16 * splits - 1) / (16 * splits) * 16, (S + splits - 1) / splits);
    const int64_t lo = std::min(span, split * len);
    return {lo, std::min(span, lo + len)};
  }
};

// Whether the module is a prefill chunk (prefill-chunk made it: attr chunk).
inline bool is_prefill_chunk(const Module& m) { return m.attrs.count("chunk") > 0; }

// The module's attr chunk (1 when absent).
inline int64_t chunk_rows(const Module& m) { return attr_int_or(m.attrs, "chunk", 1); }

// E: the positions a prefill of a prompt of `prompt_length` tokens fills before a decode of
// `steps` steps (the decode starts at step E, which reads the prompt's last token).
inline int64_t prefill_end(int64_t prompt_length, int64_t steps) { return std::min(prompt_length - 1, steps); }

// The steps a chunk of C rows takes to fill E positions.
inline int64_t prefill_steps(int64_t end, int64_t chunk) { return (end + chunk - 1) / chunk; }

}  // namespace mpk
