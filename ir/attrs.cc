// Attribute lookups and canonical formatting.
#include "ir/attrs.h"

#include <cmath>
#include <cstdio>

namespace mpk {
namespace {

const AttrValue& find_or_throw(const Attrs& a, const std::string& key) {
  auto it = a.find(key);
  if (it == a.end()) throw Error("missing attribute '" + key + "'");
  return it->second;
}

}  // namespace

int64_t attr_int(const Attrs& a, const std::string& key) {
  const AttrValue& v = find_or_throw(a, key);
  if (auto* i = std::get_if<int64_t>(&v)) return *i;
  throw Error("attribute '" + key + "' is not an integer");
}

double attr_float(const Attrs& a, const std::string& key) {
  const AttrValue& v = find_or_throw(a, key);
  if (auto* d = std::get_if<double>(&v)) return *d;
  if (auto* i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
  throw Error("attribute '" + key + "' is not a number");
}

const std::string& attr_str(const Attrs& a, const std::string& key) {
  const AttrValue& v = find_or_throw(a, key);
  if (auto* s = std::get_if<std::string>(&v)) return *s;
  throw Error("attribute '" + key + "' is not a string");
}

int64_t attr_int_or(const Attrs& a, const std::string& key, int64_t fallback) {
  return a.count(key) ? attr_int(a, key) : fallback;
}
double attr_float_or(const Attrs& a, const std::string& key, double fallback) {
  return a.count(key) ? attr_float(a, key) : fallback;
}
std::string attr_str_or(const Attrs& a, const std::string& key, const std::string& fallback) {
  return a.count(key) ? attr_str(a, key) : fallback;
}

std::string format_attr_value(const AttrValue& v) {
  if (auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (auto* d = std::get_if<double>(&v)) {
    if (std::isnan(*d)) return "nan";
    if (std::isinf(*d)) return *d > 0 ? "inf" : "-inf";
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.17g", *d);
    std::string s = buf;
    if (s.find_first_of(".e") == std::string::npos) s += ".0";
    return s;
  }
  std::string out = "\"";
  for (char c : std::get<std::string>(v)) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string format_attrs(const Attrs& a) {
  std::string s = "{";
  bool first = true;
  for (const auto& [k, v] : a) {
    if (!first) s += ", ";
    first = false;
    s += k + "=" + format_attr_value(v);
  }
  return s + "}";
}

}  // namespace mpk
