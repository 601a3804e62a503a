// Typed parsing of pass option strings.
#include "passes/pass.h"

#include <charconv>
#include <cstdlib>

#include "ir/error.h"

namespace mpk {
namespace {

[[noreturn]] void bad_value(const std::string& pass, const std::string& key, const std::string& v,
                            const char* want) {
  throw Error("pass '" + pass + "': option '" + key + "' expects " + want + ", got '" + v + "'");
}

}  // namespace

int64_t option_int(const PassOptions& o, const std::string& pass, const std::string& key,
                   int64_t fallback) {
  auto it = o.find(key);
  if (it == o.end()) return fallback;
  int64_t v = 0;
  const std::string& s = it->second;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) bad_value(pass, key, s, "an integer");
  return v;
}

double option_float(const PassOptions& o, const std::string& pass, const std::string& key,
                    double fallback) {
  auto it = o.find(key);
  if (it == o.end()) return fallback;
  const std::string& s = it->second;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size()) bad_value(pass, key, s, "a number");
  return v;
}

bool option_bool(const PassOptions& o, const std::string& pass, const std::string& key,
                 bool fallback) {
  auto it = o.find(key);
  if (it == o.end()) return fallback;
  if (it->second == "true" || it->second == "1") return true;
  if (it->second == "false" || it->second == "0") return false;
  bad_value(pass, key, it->second, "true or false");
}

std::string option_str(const PassOptions& o, const std::string& key, const std::string& fallback) {
  auto it = o.find(key);
  return it == o.end() ? fallback : it->second;
}

}  // namespace mpk
