// The pass interface. A pass has a kebab-case name, typed options given as strings in
// a text pipeline (`assign-sm{policy=critical-path}`), and runs on the in-memory Module.
// Adding a pass: one file defining its PassInfo (options typed in passes/options.h) and
// registering it with one line, MPK_PASS(its_info_function).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/module.h"

namespace mpk {

using PassOptions = std::map<std::string, std::string>;

struct PassResult {
  bool changed = false;
  std::optional<std::string> error;  // set: the pass failed; the module may be partial

  static PassResult ok(bool changed) { return {changed, std::nullopt}; }
  static PassResult failure(std::string message) { return {false, std::move(message)}; }
};

class Pass {
 public:
  virtual ~Pass() = default;
  virtual PassResult run(Module& module) = 0;
};

// What an option holds, so that tools can build a widget for it (a number field, a
// checkbox, a combo) and check a value before a pipeline runs.
enum class OptionKind { kString, kInt, kFloat, kBool, kChoice };
const char* name_of(OptionKind k);  // "string", "int", "float", "bool", "choice"

struct PassOptionInfo {
  std::string name;
  std::string default_value;  // "" when the default is computed (e.g. from the machine)
  std::string help;
  OptionKind kind = OptionKind::kString;
  std::vector<std::string> choices;  // kChoice: the accepted values
  std::optional<double> min, max;    // kInt, kFloat: inclusive bounds, when there are any
  bool accepts_auto = false;         // the value "auto" also means the computed default

  static PassOptionInfo integer(std::string name, std::string default_value, std::string help,
                                std::optional<double> min = {}, std::optional<double> max = {});
  static PassOptionInfo real(std::string name, std::string default_value, std::string help,
                             std::optional<double> min = {}, std::optional<double> max = {});
  static PassOptionInfo boolean(std::string name, std::string default_value, std::string help);
  static PassOptionInfo text(std::string name, std::string default_value, std::string help);
  static PassOptionInfo choice(std::string name, std::string default_value, std::string help,
                               std::vector<std::string> choices);
};

// Why `value` is not acceptable for option `o` (wrong kind, out of bounds, not one of
// the choices), or "" when it is. Passes may check more (e.g. a value that depends on
// the module), but never accept less.
std::string option_value_problem(const PassOptionInfo& o, const std::string& value);

struct PassInfo {
  std::string name;
  std::string summary;
  std::vector<PassOptionInfo> options;
  // Options were checked against `options` (names only) before this is called; it
  // throws mpk::Error for a malformed value.
  std::function<std::unique_ptr<Pass>(const PassOptions&)> create;
};

// Registers a pass (passes/registry.h lists them); MPK_PASS calls it at start-up.
bool register_pass(PassInfo (*make)());

}  // namespace mpk

// In a pass's file: MPK_PASS(fuse_norm_pass_info); where `PassInfo fuse_norm_pass_info()`.
#define MPK_PASS(make) \
  [[maybe_unused]] static const bool mpk_pass_registered_##make = ::mpk::register_pass(make)
