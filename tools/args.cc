// Command-line parsing for the mpk tools.
#include "tools/args.h"

#include <algorithm>
#include <charconv>

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

int64_t Args::get_int(const std::string& key, int64_t fallback) const {
  if (!has(key)) return fallback;
  std::string s = get(key);
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size())
    throw Error("option '--" + key + "' expects an integer, got '" + s + "'");
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

std::vector<int64_t> parse_int_list(const std::string& s, const std::string& what) {
  std::vector<int64_t> out;
  for (const std::string& part : split(s, ',')) {
    int64_t v = 0;
    auto [p, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
    if (part.empty() || ec != std::errc() || p != part.data() + part.size())
      throw Error(what + ": '" + part + "' is not an integer");
    out.push_back(v);
  }
  return out;
}

}  // namespace mpk
