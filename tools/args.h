// A small command-line parser shared by the mpk tools: `--key=value`, `--key value`,
// boolean `--flag`, and positionals. `-x` is the one-letter option `x` (`-o out`).
// Unknown options are errors naming the option.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mpk {

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
  // Throws mpk::Error for a value that is not an integer.
  int64_t get_int(const std::string& key, int64_t fallback) const;
  const std::vector<std::string>& positionals() const { return positionals_; }

 private:
  std::map<std::string, std::vector<std::string>> values_;
  std::map<std::string, bool> flags_;
  std::vector<std::string> positionals_;
};

// Parses "1,2,3" into integers; throws mpk::Error naming `what`.
std::vector<int64_t> parse_int_list(const std::string& s, const std::string& what);
std::vector<std::string> split(const std::string& s, char sep);

}  // namespace mpk
