// Command-line parsing for the mpk tools.
#include "tools/args.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "ir/error.h"

namespace mpk {
namespace {

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

}  // namespace

Args::Args(int argc, char** argv, const std::vector<std::string>& value_options,
           const std::vector<std::string>& flag_options,
           const std::vector<std::string>& repeatable) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.size() == 2 && a[0] == '-' && a[1] != '-') a = "-" + a;  // -o: one-letter option o
    if (a.size() < 3 || a.rfind("--", 0) != 0) {
      if (a.size() > 1 && a[0] == '-' && a != "-") throw Error("unknown option '" + a + "'");
      positionals_.push_back(a);
      continue;
    }
    std::string key = a.substr(2);
    std::optional<std::string> value;
    if (auto eq = key.find('='); eq != std::string::npos) {
      value = key.substr(eq + 1);
      key = key.substr(0, eq);
    }
    if (contains(flag_options, key)) {
      if (value) throw Error("option '--" + key + "' takes no value");
      flags_[key] = true;
    } else if (contains(value_options, key) || contains(repeatable, key)) {
      if (!value) {
        if (i + 1 >= argc) throw Error("option '--" + key + "' needs a value");
        value = argv[++i];
      }
      if (values_.count(key) && !contains(repeatable, key))
        throw Error("option '--" + key + "' given twice");
      values_[key].push_back(*value);
    } else {
      throw Error("unknown option '--" + key + "'");
    }
  }
}

std::string Args::get(const std::string& key, const std::string& fallback) const {
  auto it = values_.find(key);
  return it == values_.end() ? fallback : it->second.back();
}

std::vector<std::string> Args::get_all(const std::string& key) const {
  auto it = values_.find(key);
  return it == values_.end() ? std::vector<std::string>{} : it->second;
}

namespace {

// S as an int64 in RANGE, or an Error "WHAT must be an integer in LO..HI, got 'S'".
int64_t parse_int(const std::string& s, const std::string& what, IntRange range) {
  const std::string in_range = std::to_string(range.lo) + ".." + std::to_string(range.hi);
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec == std::errc::result_out_of_range && p == s.data() + s.size())
    throw Error(what + " must be an integer in " + in_range + ", got '" + s + "' (beyond int64)");
  if (s.empty() || ec != std::errc() || p != s.data() + s.size())
    throw Error(what + " must be an integer in " + in_range + ", got '" + s + "'");
  if (v < range.lo || v > range.hi) throw Error(what + " must be in " + in_range + ", got " + s);
  return v;
}

}  // namespace

int64_t prefill_chunk_option(const Args& args, const std::string& fallback) {
  const std::string v = args.get("prefill-chunk", fallback);
  if (v == "auto") return kAutoPrefillChunk;
  try {
    return parse_int(v, "option '--prefill-chunk'", kPrefillChunkRange);
  } catch (const Error&) {
  }
  throw Error("option '--prefill-chunk' expects auto or rows in " + std::to_string(kPrefillChunkRange.lo) + ".." +
              std::to_string(kPrefillChunkRange.hi) + ", got '" + v + "'");
}

int64_t Args::get_int(const std::string& key, int64_t fallback, IntRange range) const {
  return has(key) ? parse_int(get(key), "option '--" + key + "'", range) : fallback;
}

double Args::get_number(const std::string& key, double fallback, NumberRange range) const {
  if (!has(key)) return fallback;
  const std::string s = get(key);
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || p != s.data() + s.size() || !std::isfinite(v) ||
      v < range.lo || v > range.hi) {
    char lo[32], hi[32];
    std::snprintf(lo, sizeof lo, "%g", range.lo);
    std::snprintf(hi, sizeof hi, "%g", range.hi);
    throw Error("option '--" + key + "' must be a number in " + lo + ".." + hi + ", got '" + s + "'");
  }
  return v;
}

uint64_t Args::get_u64(const std::string& key, uint64_t fallback) const {
  return has(key) ? parse_u64(get(key), "option '--" + key + "'") : fallback;
}

uint64_t parse_u64(const std::string& s, const std::string& what) {
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || p != s.data() + s.size())
    throw Error(what + " expects an unsigned 64-bit integer, got '" + s + "'");
  return v;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t p = s.find(sep, start);
    out.push_back(s.substr(start, p - start));
    if (p == std::string::npos) break;
    start = p + 1;
  }
  return out;
}

std::vector<int64_t> parse_int_list(const std::string& s, const std::string& what, IntRange range) {
  std::vector<int64_t> out;
  for (const std::string& part : split(s, ',')) out.push_back(parse_int(part, what + ": entry", range));
  return out;
}

}  // namespace mpk
