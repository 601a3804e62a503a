// Attributes: small sorted key/value maps on operators, tasks, schedules and modules.
// Sorted so that printing is canonical.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>

#include "ir/error.h"

namespace mpk {

using AttrValue = std::variant<int64_t, double, std::string>;
using Attrs = std::map<std::string, AttrValue>;

// Typed lookups; a missing key or a wrong type throws mpk::Error naming the key.
int64_t attr_int(const Attrs& a, const std::string& key);
double attr_float(const Attrs& a, const std::string& key);  // accepts ints too
const std::string& attr_str(const Attrs& a, const std::string& key);
int64_t attr_int_or(const Attrs& a, const std::string& key, int64_t fallback);
double attr_float_or(const Attrs& a, const std::string& key, double fallback);
std::string attr_str_or(const Attrs& a, const std::string& key, const std::string& fallback);

// Canonical text of one value: ints as digits, floats with %.17g (always with a '.',
// 'e' or "inf"/"nan" so they re-parse as floats), strings double-quoted with \" and \\ escaped.
std::string format_attr_value(const AttrValue& v);
// "{a=1, b=2.5, c=\"x\"}"; "{}" when empty.
std::string format_attrs(const Attrs& a);

}  // namespace mpk
