// Typed options of a pass or policy, stated once: a struct whose member initializers are
// the defaults, and a schema that binds each option name to a member with its help, kind
// and bounds. The schema gives the PassOptionInfo list (defaults printed from the
// struct) and turns checked option strings into the struct:
//
//   struct InferDepsOptions { bool prune_same_step = true; };
//   const auto schema = OptionSchema<InferDepsOptions>().flag(
//       "prune-same-step", &InferDepsOptions::prune_same_step, "drop implied dependencies");
//   InferDepsOptions o = schema.parse(options, "infer-deps");   // throws mpk::Error
//
// A std::optional member is an option whose default is computed (e.g. from the machine):
// it is unset by default and by the value "auto".
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/error.h"
#include "passes/pass.h"

namespace mpk {

// Conversions of values that option_value_problem accepted.
int64_t checked_option_int(const std::string& value);
double checked_option_float(const std::string& value);
bool checked_option_bool(const std::string& value);
// "%g" of a default.
std::string option_number_text(double v);

template <class Opts>
class OptionSchema {
 public:
  OptionSchema& flag(std::string name, bool Opts::*field, std::string help) {
    return add(PassOptionInfo::boolean(std::move(name), Opts{}.*field ? "true" : "false",
                                       std::move(help)),
               [field](Opts& o, const std::string& v) { o.*field = checked_option_bool(v); });
  }
  OptionSchema& integer(std::string name, int64_t Opts::*field, std::string help,
                        std::optional<double> min = {}, std::optional<double> max = {}) {
    return add(PassOptionInfo::integer(std::move(name), std::to_string(Opts{}.*field),
                                       std::move(help), min, max),
               [field](Opts& o, const std::string& v) { o.*field = checked_option_int(v); });
  }
  OptionSchema& integer(std::string name, std::optional<int64_t> Opts::*field, std::string help,
                        std::optional<double> min = {}, std::optional<double> max = {}) {
    return add(computed(PassOptionInfo::integer(std::move(name), "", std::move(help), min, max)),
               [field](Opts& o, const std::string& v) {
                 o.*field = v == "auto" ? std::nullopt
                                        : std::optional<int64_t>(checked_option_int(v));
               });
  }
  OptionSchema& real(std::string name, double Opts::*field, std::string help,
                     std::optional<double> min = {}, std::optional<double> max = {}) {
    return add(PassOptionInfo::real(std::move(name), option_number_text(Opts{}.*field),
                                    std::move(help), min, max),
               [field](Opts& o, const std::string& v) { o.*field = checked_option_float(v); });
  }
  OptionSchema& real(std::string name, std::optional<double> Opts::*field, std::string help,
                     std::optional<double> min = {}, std::optional<double> max = {}) {
    return add(computed(PassOptionInfo::real(std::move(name), "", std::move(help), min, max)),
               [field](Opts& o, const std::string& v) {
                 o.*field = v == "auto" ? std::nullopt
                                        : std::optional<double>(checked_option_float(v));
               });
  }
  OptionSchema& text(std::string name, std::string Opts::*field, std::string help) {
    return add(PassOptionInfo::text(std::move(name), Opts{}.*field, std::move(help)),
               [field](Opts& o, const std::string& v) { o.*field = v; });
  }
  // `choices` empty: filled in later by whoever knows them (pinned's base policy).
  OptionSchema& choice(std::string name, std::string Opts::*field, std::string help,
                       std::vector<std::string> choices) {
    return add(PassOptionInfo::choice(std::move(name), Opts{}.*field, std::move(help),
                                      std::move(choices)),
               [field](Opts& o, const std::string& v) { o.*field = v; });
  }
  template <class Enum>
  OptionSchema& choice(std::string name, Enum Opts::*field, std::string help,
                       std::vector<std::pair<std::string, Enum>> values) {
    std::vector<std::string> names;
    std::string fallback;
    for (const auto& [text, value] : values) {
      names.push_back(text);
      if (value == Opts{}.*field) fallback = text;
    }
    return add(PassOptionInfo::choice(std::move(name), fallback, std::move(help), names),
               [field, values](Opts& o, const std::string& v) {
                 for (const auto& [text, value] : values)
                   if (text == v) o.*field = value;
               });
  }

  const std::vector<PassOptionInfo>& infos() const { return infos_; }
  bool declares(const std::string& name) const { return index_of(name) >= 0; }

  // The defaults with `given` applied. Throws mpk::Error("pass '<pass>': ...") for an
  // option it does not declare or a value of the wrong kind or out of bounds.
  Opts parse(const PassOptions& given, const std::string& pass) const {
    Opts o{};
    for (const auto& [key, value] : given) {
      const int i = index_of(key);
      if (i < 0) throw Error("pass '" + pass + "': unknown option '" + key + "'");
      if (const std::string problem = option_value_problem(infos_[i], value); !problem.empty())
        throw Error("pass '" + pass + "': " + problem);
      setters_[i](o, value);
    }
    return o;
  }

 private:
  using Setter = std::function<void(Opts&, const std::string&)>;

  static PassOptionInfo computed(PassOptionInfo info) {
    info.accepts_auto = true;
    return info;
  }
  OptionSchema& add(PassOptionInfo info, Setter set) {
    infos_.push_back(std::move(info));
    setters_.push_back(std::move(set));
    return *this;
  }
  int index_of(const std::string& name) const {
    for (size_t i = 0; i < infos_.size(); ++i)
      if (infos_[i].name == name) return static_cast<int>(i);
    return -1;
  }

  std::vector<PassOptionInfo> infos_;
  std::vector<Setter> setters_;
};

// A PassInfo whose options are `schema` and whose passes `make` builds from the parsed
// options struct.
template <class Opts, class Make>
PassInfo typed_pass_info(std::string name, std::string summary, OptionSchema<Opts> schema,
                         Make make) {
  PassInfo info;
  info.name = name;
  info.summary = std::move(summary);
  info.options = schema.infos();
  info.create = [name, schema = std::move(schema), make](const PassOptions& o) {
    return std::unique_ptr<Pass>(make(schema.parse(o, name)));
  };
  return info;
}

}  // namespace mpk
