// A small command-line parser shared by the mpk tools: `--key=value`, `--key value`,
// boolean `--flag`, and positionals. `-x` is the one-letter option `x` (`-o out`).
// Unknown options are errors naming the option. Numeric values are parsed here, and only
// here: integers as int64, numbers as finite doubles, each within an explicit range; the
// ranges of the options the tools share are below.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/import/limits.h"

namespace mpk {

struct IntRange {
  int64_t lo, hi;
};
struct NumberRange {
  double lo, hi;
};

inline constexpr IntRange kAnyInt64{std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()};
// Decode steps: step s works at position s, so a run also needs steps <= the module's
// max_seq_len, which every backend checks once the module is known.
inline constexpr IntRange kStepsRange{1, kMaxPositions};
inline constexpr IntRange kBatchRange{1, kMaxBatch};
inline constexpr IntRange kPrefillChunkRange{0, kMaxChunkRows};  // 0: one decode step per prompt token
inline constexpr IntRange kTpRange{1, 8};  // tensor-parallel ranks (ir/ops/tensor_parallel.h)
inline constexpr IntRange kMaxSeqRange{0, kMaxPositions};  // 0: the importer's default
inline constexpr IntRange kThreadsRange{0, 4096};          // 0: every core
inline constexpr IntRange kPromptTokenRange{0, kMaxVocab - 1};
inline constexpr int64_t kMaxPromptTokens = kMaxPositions;
// Seconds a wait may make no progress: 1 ms to 11.6 days (in ns it fits int64 easily).
inline constexpr NumberRange kWatchdogRange{1e-3, 1e6};

class Args {
 public:
  // `value_options` take a value, `flag_options` do not (both without the leading --).
  // `repeatable` value options may be given several times. Throws mpk::Error.
  Args(int argc, char** argv, const std::vector<std::string>& value_options,
       const std::vector<std::string>& flag_options,
       const std::vector<std::string>& repeatable = {});

  bool has(const std::string& key) const { return values_.count(key) > 0; }
  bool flag(const std::string& key) const { return flags_.count(key) > 0; }
  std::string get(const std::string& key, const std::string& fallback = "") const;
  std::vector<std::string> get_all(const std::string& key) const;
  // The value as an int64 in `range` (fallback when absent). Throws mpk::Error naming the
  // option and the range for a non-integer, a value beyond int64 or outside the range.
  int64_t get_int(const std::string& key, int64_t fallback, IntRange range = kAnyInt64) const;
  // The value as a finite number in `range` (fallback when absent); NaN and infinities
  // never pass. Throws mpk::Error naming the option and the range.
  double get_number(const std::string& key, double fallback, NumberRange range) const;
  // The value as an unsigned 64-bit integer (seeds). Throws mpk::Error naming the option.
  uint64_t get_u64(const std::string& key, uint64_t fallback) const;
  const std::vector<std::string>& positionals() const { return positionals_; }

 private:
  std::map<std::string, std::vector<std::string>> values_;
  std::map<std::string, bool> flags_;
  std::vector<std::string> positionals_;
};

// --prefill-chunk auto|C: the rows of a prefill chunk in kPrefillChunkRange, or
// kAutoPrefillChunk for auto (auto_prefill_chunk, driver/compile.h, once the model and the prompt
// are known); `fallback` when absent. Throws mpk::Error naming the option.
inline constexpr int64_t kAutoPrefillChunk = -1;
int64_t prefill_chunk_option(const Args& args, const std::string& fallback);

// Parses "1,2,3" into integers in `range`; throws mpk::Error naming `what`.
std::vector<int64_t> parse_int_list(const std::string& s, const std::string& what,
                                    IntRange range = kAnyInt64);
// Parses an unsigned 64-bit integer; throws mpk::Error naming `what`.
uint64_t parse_u64(const std::string& s, const std::string& what);
std::vector<std::string> split(const std::string& s, char sep);

}  // namespace mpk
