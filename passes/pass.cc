// The declared kinds of pass options: checking a value against its declaration, and
// converting a checked value.
#include "passes/options.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "ir/error.h"

namespace mpk {
namespace {

bool parse_int(const std::string& s, int64_t& v) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return !s.empty() && ec == std::errc() && p == s.data() + s.size();
}

// A finite number: "nan" and "inf" are refused here, for every float option (a NaN would
// pass any ">= 0" check that follows).
bool parse_float(const std::string& s, double& v) {
  char* end = nullptr;
  v = std::strtod(s.c_str(), &end);
  return !s.empty() && end == s.c_str() + s.size() && std::isfinite(v);
}

PassOptionInfo make(std::string name, std::string default_value, std::string help,
                    OptionKind kind) {
  PassOptionInfo o;
  o.name = std::move(name);
  o.default_value = std::move(default_value);
  o.help = std::move(help);
  o.kind = kind;
  return o;
}

}  // namespace

std::string option_number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

const char* name_of(OptionKind k) {
  switch (k) {
    case OptionKind::kString: return "string";
    case OptionKind::kInt: return "int";
    case OptionKind::kFloat: return "float";
    case OptionKind::kBool: return "bool";
    case OptionKind::kChoice: return "choice";
  }
  return "?";
}

PassOptionInfo PassOptionInfo::integer(std::string name, std::string default_value,
                                       std::string help, std::optional<double> min,
                                       std::optional<double> max) {
  PassOptionInfo o = make(std::move(name), std::move(default_value), std::move(help),
                          OptionKind::kInt);
  o.min = min;
  o.max = max;
  return o;
}

PassOptionInfo PassOptionInfo::real(std::string name, std::string default_value,
                                    std::string help, std::optional<double> min,
                                    std::optional<double> max) {
  PassOptionInfo o = make(std::move(name), std::move(default_value), std::move(help),
                          OptionKind::kFloat);
  o.min = min;
  o.max = max;
  return o;
}

PassOptionInfo PassOptionInfo::boolean(std::string name, std::string default_value,
                                       std::string help) {
  return make(std::move(name), std::move(default_value), std::move(help), OptionKind::kBool);
}

PassOptionInfo PassOptionInfo::text(std::string name, std::string default_value,
                                    std::string help) {
  return make(std::move(name), std::move(default_value), std::move(help), OptionKind::kString);
}

PassOptionInfo PassOptionInfo::choice(std::string name, std::string default_value,
                                      std::string help, std::vector<std::string> choices) {
  PassOptionInfo o = make(std::move(name), std::move(default_value), std::move(help),
                          OptionKind::kChoice);
  o.choices = std::move(choices);
  return o;
}

std::string option_value_problem(const PassOptionInfo& o, const std::string& value) {
  const std::string what = "option '" + o.name + "' ";
  if (value.empty()) return what + "needs a value";
  for (char c : value)
    if (c <= ' ' || c == ',' || c == '{' || c == '}' || c == '=')
      return what + "value '" + value + "' holds a character a pipeline cannot carry ('" +
             std::string(1, c) + "')";
  if (o.accepts_auto && value == "auto") return "";
  double number = 0;
  switch (o.kind) {
    case OptionKind::kString:
      return "";
    case OptionKind::kChoice:
      for (const std::string& c : o.choices)
        if (c == value) return "";
      {
        std::string known;
        for (const std::string& c : o.choices) known += (known.empty() ? "" : ", ") + c;
        return what + "expects one of " + known + ", got '" + value + "'";
      }
    case OptionKind::kBool:
      if (value == "true" || value == "false" || value == "1" || value == "0") return "";
      return what + "expects true or false, got '" + value + "'";
    case OptionKind::kInt: {
      int64_t v = 0;
      if (!parse_int(value, v))
        return what + "expects an integer" + (o.accepts_auto ? " or 'auto'" : "") + ", got '" +
               value + "'";
      number = static_cast<double>(v);
      break;
    }
    case OptionKind::kFloat:
      if (!parse_float(value, number)) return what + "expects a finite number, got '" + value + "'";
      break;
  }
  if ((o.min && number < *o.min) || (o.max && number > *o.max)) {
    std::string range = o.min && o.max ? "between " + option_number_text(*o.min) + " and " +
                                             option_number_text(*o.max)
                        : o.min ? ">= " + option_number_text(*o.min)
                                : "<= " + option_number_text(*o.max);
    return what + "must be " + range + ", got " + value;
  }
  return "";
}

int64_t checked_option_int(const std::string& value) {
  int64_t v = 0;
  parse_int(value, v);
  return v;
}

double checked_option_float(const std::string& value) {
  double v = 0;
  parse_float(value, v);
  return v;
}

bool checked_option_bool(const std::string& value) { return value == "true" || value == "1"; }

}  // namespace mpk
