// Golden case files: parsing, FileCheck-style matching, fresh expectations (golden_check.h).
#include "tests/passes/golden_check.h"

#include <algorithm>
#include <array>
#include <regex>
#include <sstream>

#include "ir/error.h"

namespace mpk::golden {
namespace {

constexpr std::string_view kSeparator = "// -----";
constexpr std::array<std::string_view, 6> kLineKinds = {"tensor", "op", "task", "event", "schedule", "worker"};

struct DirectiveName {
  std::string_view prefix;
  Directive directive;
};
constexpr std::array<DirectiveName, 4> kExpectationPrefixes = {{{"// CHECK: ", Directive::kCheck},
                                                                {"// CHECK-NEXT: ", Directive::kCheckNext},
                                                                {"// CHECK-NOT: ", Directive::kCheckNot},
                                                                {"// ERROR: ", Directive::kError}}};

std::string_view directive_name(Directive d) {
  for (const DirectiveName& n : kExpectationPrefixes)
    if (n.directive == d) return n.prefix.substr(3, n.prefix.size() - 5);
  return "?";
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string join_lines(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) out += l + "\n";
  return out;
}

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

// The ECMAScript regex of a pattern: literal text escaped, {{re}} parts kept as groups.
// Throws mpk::Error for an unterminated {{ or a malformed regex.
std::regex compile_pattern(const std::string& pattern) {
  std::string re;
  for (size_t i = 0; i < pattern.size();) {
    if (pattern.compare(i, 2, "{{") == 0) {
      const size_t end = pattern.find("}}", i + 2);
      if (end == std::string::npos) throw Error("'{{' without '}}' in pattern \"" + pattern + "\"");
      re += "(?:" + pattern.substr(i + 2, end - i - 2) + ")";
      i = end + 2;
      continue;
    }
    if (std::string_view("\\^$.|?*+()[]{}").find(pattern[i]) != std::string_view::npos) re += '\\';
    re += pattern[i++];
  }
  try {
    return std::regex(re, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    throw Error("bad regex in pattern \"" + pattern + "\": " + e.what());
  }
}

// A pattern that matches exactly `text`: literal, with `{{` and line breaks written as regexes.
std::string literal_pattern(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text.compare(i, 2, "{{") == 0) {
      out += "{{\\{\\{}}";
      ++i;
    } else if (text[i] == '\n') {
      out += "{{\\n}}";
    } else {
      out += text[i];
    }
  }
  return out;
}

std::string first_word(const std::string& s) { return s.substr(0, s.find(' ')); }

// Checks one case's directives; `at(line)` prefixes the file and line.
template <typename At>
void validate_case(const Case& c, int line, At at) {
  if (c.name.empty()) throw Error(at(line) + "a case without '// CASE: <name>'");
  if (c.pipeline.empty()) throw Error(at(line) + "case '" + c.name + "' has no '// RUN: <pipeline>'");
  if (c.expectations.empty())
    throw Error(at(line) + "case '" + c.name + "' expects nothing (add CHECK or ERROR lines)");
  const auto errors = std::count_if(c.expectations.begin(), c.expectations.end(),
                                    [](const Expectation& e) { return e.directive == Directive::kError; });
  if (errors > 0 && (errors > 1 || c.expectations.size() > 1))
    throw Error(at(c.expectations.front().line) + "case '" + c.name +
                "': an ERROR case has one ERROR line and no CHECK lines");
  for (const Expectation& e : c.expectations) {
    if (e.directive == Directive::kCheckNext) throw Error(at(e.line) + "CHECK-NEXT with no CHECK before it");
    if (e.directive == Directive::kCheck) break;
  }
}

}  // namespace

bool pattern_matches(const std::string& pattern, const std::string& line) {
  return std::regex_match(line, compile_pattern(pattern));
}

std::vector<Case> parse_case_file(const std::string& text, const std::string& file) {
  const std::vector<std::string> lines = split_lines(text);
  auto at = [&](int line) { return file + ":" + std::to_string(line) + ": "; };
  std::vector<Case> cases;
  Case current;
  current.first_line = 1;
  std::vector<bool> is_input(lines.size(), false);
  auto finish = [&](int last) {
    current.last_line = last;
    validate_case(current, current.first_line, at);
    for (const Case& c : cases)
      if (c.name == current.name) throw Error(at(current.first_line) + "case name '" + c.name + "' used twice");
    std::vector<std::string> input(lines.size());
    for (int i = current.first_line; i <= last; ++i)
      if (is_input[i - 1]) input[i - 1] = lines[i - 1];
    current.input = join_lines(input);
    cases.push_back(std::move(current));
    current = Case{};
    current.first_line = last + 2;
  };
  for (int n = 1; n <= static_cast<int>(lines.size()); ++n) {
    const std::string& l = lines[n - 1];
    if (!starts_with(l, "//")) {
      is_input[n - 1] = true;
      continue;
    }
    if (l == kSeparator) {
      finish(n - 1);
      continue;
    }
    if (starts_with(l, "// CASE: ")) {
      if (!current.name.empty()) throw Error(at(n) + "a second CASE in case '" + current.name + "' (missing '// -----'?)");
      current.name = l.substr(9);
      if (current.name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") != std::string::npos)
        throw Error(at(n) + "case name '" + current.name + "' is not [a-z0-9_]+");
      continue;
    }
    if (starts_with(l, "// RUN: ")) {
      if (!current.pipeline.empty()) throw Error(at(n) + "a second RUN in one case");
      current.pipeline = l.substr(8);
      continue;
    }
    const auto known = std::find_if(kExpectationPrefixes.begin(), kExpectationPrefixes.end(),
                                    [&](const DirectiveName& d) { return starts_with(l, d.prefix); });
    if (known == kExpectationPrefixes.end())
      throw Error(at(n) + "unknown directive '" + l + "' (CASE, RUN, CHECK, CHECK-NEXT, CHECK-NOT, ERROR or -----)");
    Expectation e{known->directive, l.substr(known->prefix.size()), n};
    try {
      compile_pattern(e.pattern);
    } catch (const Error& err) {
      throw Error(at(n) + err.what());
    }
    current.expectations.push_back(std::move(e));
  }
  finish(static_cast<int>(lines.size()));
  return cases;
}

std::string match_case(const Case& c, const Outcome& outcome, const std::string& file) {
  std::string failures;
  auto fail = [&](const Expectation& e, const std::string& what) {
    failures += file + ":" + std::to_string(e.line) + ": case '" + c.name + "': " +
                std::string(directive_name(e.directive)) + ": " + e.pattern + "\n    " + what + "\n";
  };
  const Expectation& first = c.expectations.front();
  if (first.directive == Directive::kError) {
    if (!outcome.failed)
      fail(first, "the pipeline succeeded");
    else if (!pattern_matches(first.pattern, outcome.text))
      fail(first, "the pipeline failed with: " + outcome.text);
    return failures;
  }
  if (outcome.failed) {
    fail(first, "the pipeline failed: " + outcome.text);
    return failures;
  }
  const std::vector<std::string> out = split_lines(outcome.text);
  const int n = static_cast<int>(out.size());
  std::vector<std::regex> regexes;
  for (const Expectation& e : c.expectations) regexes.push_back(compile_pattern(e.pattern));
  auto matches = [&](const Expectation& e, int i) {
    return std::regex_match(out[i], regexes[&e - c.expectations.data()]);
  };
  int pos = 0;  // the next output line to look at (0-based)
  std::vector<const Expectation*> nots;
  auto check_nots = [&](int end) {  // CHECK-NOTs pending over output lines [pos, end)
    for (const Expectation* e : nots)
      for (int i = pos; i < end; ++i)
        if (matches(*e, i))
          fail(*e, "output line " + std::to_string(i + 1) + " matches: " + out[i]);
    nots.clear();
  };
  for (const Expectation& e : c.expectations) {
    if (e.directive == Directive::kCheckNot) {
      nots.push_back(&e);
      continue;
    }
    int found = -1;
    if (e.directive == Directive::kCheck) {
      for (int i = pos; i < n && found < 0; ++i)
        if (matches(e, i)) found = i;
      if (found < 0) fail(e, "no output line from line " + std::to_string(pos + 1) + " on matches");
    } else if (pos < n && matches(e, pos)) {
      found = pos;
    } else {
      fail(e, "output line " + std::to_string(pos + 1) + " (the next one) is: " + (pos < n ? out[pos] : "<end of output>"));
    }
    if (found < 0) break;  // later expectations would only repeat this failure
    check_nots(found);
    pos = found + 1;
  }
  if (failures.empty()) check_nots(n);
  if (failures.empty()) return failures;
  failures += "output of '" + c.pipeline + "':\n";
  for (int i = 0; i < n; ++i) failures += std::to_string(i + 1) + ": " + out[i] + "\n";
  return failures;
}

std::vector<std::string> fresh_expectations(const Case& c, const Outcome& outcome) {
  if (outcome.failed) return {"// ERROR: " + literal_pattern(outcome.text)};
  std::vector<std::string_view> kinds;
  for (std::string_view kind : kLineKinds)
    for (const Expectation& e : c.expectations)
      if (e.directive != Directive::kError && first_word(e.pattern) == kind) {
        kinds.push_back(kind);
        break;
      }
  if (kinds.empty()) kinds.assign(kLineKinds.begin(), kLineKinds.end());
  const std::vector<std::string> out = split_lines(outcome.text);
  std::vector<std::string> fresh;
  for (std::string_view kind : kinds) {
    bool first = true;
    for (const std::string& line : out) {
      if (first_word(line) != kind) continue;
      fresh.push_back((first ? "// CHECK: " : "// CHECK-NEXT: ") + literal_pattern(line));
      first = false;
    }
    fresh.push_back("// CHECK-NOT: " + std::string(kind) + " {{.*}}");
  }
  return fresh;
}

std::string replace_expectations(const std::string& text, const Case& c, const std::vector<std::string>& lines) {
  const std::vector<std::string> in = split_lines(text);
  std::vector<bool> drop(in.size(), false);
  for (const Expectation& e : c.expectations) drop[e.line - 1] = true;
  int last_kept = c.first_line - 1;  // the case's last non-blank line that stays (1-based)
  for (int n = c.first_line; n <= c.last_line; ++n)
    if (!drop[n - 1] && !in[n - 1].empty()) last_kept = n;
  std::vector<std::string> out;
  for (int n = 1; n <= static_cast<int>(in.size()); ++n) {
    if (!drop[n - 1]) out.push_back(in[n - 1]);
    if (n == last_kept) out.insert(out.end(), lines.begin(), lines.end());
  }
  return join_lines(out);
}

}  // namespace mpk::golden
