// The golden case files of the passes (docs/passes.md, "Golden tests"): one file per
// pass, cases separated by `// -----`, each an input module in the text form with its
// name (`// CASE:`), its pipeline (`// RUN:`) and FileCheck-style expectations
// (`// CHECK:`, `// CHECK-NEXT:`, `// CHECK-NOT:`, `// ERROR:`) matched against the
// pipeline's result. This file parses case files, matches expectations and writes fresh
// ones for MPK_UPDATE_GOLDEN=1.
#pragma once

#include <string>
#include <vector>

namespace mpk::golden {

enum class Directive { kCheck, kCheckNext, kCheckNot, kError };

struct Expectation {
  Directive directive = Directive::kCheck;
  std::string pattern;  // literal text with {{regex}} parts, matched against whole lines
  int line = 0;         // 1-based line in the case file
};

struct Case {
  std::string name;
  std::string pipeline;
  int first_line = 0, last_line = 0;  // 1-based, inclusive, without the separators
  // The input module: the file's text with every line outside the case and every
  // directive line blanked, so parse errors name lines of the case file.
  std::string input;
  std::vector<Expectation> expectations;
};

// Throws mpk::Error("<file>:<line>: <problem>") for a malformed file: an unknown `//`
// directive, a case without a name, a pipeline or an expectation, a name used twice, a
// CHECK-NEXT with no CHECK before it, ERROR beside CHECKs, a bad {{regex}}.
std::vector<Case> parse_case_file(const std::string& text, const std::string& file);

// What running a case gave: the printed module, or the message of the error it failed with.
struct Outcome {
  bool failed = false;
  std::string text;
};

// Whether `pattern` (literal text with {{regex}} parts) matches all of `line`.
bool pattern_matches(const std::string& pattern, const std::string& line);

// Empty when every expectation of `c` holds for `outcome`; otherwise what failed, one
// "<file>:<line>: case '<name>': ..." line per failure, then the output it was matched
// against, with line numbers.
std::string match_case(const Case& c, const Outcome& outcome, const std::string& file);

// Fresh expectation lines for `outcome`: `// ERROR: <message>` when it failed; else, for
// each kind of output line (its first word: tensor, op, task, event, schedule, worker)
// that `c`'s expectations name (all but the module header when they name none), every
// line of that kind in order (CHECK, then CHECK-NEXT) followed by
// `// CHECK-NOT: <kind> {{.*}}`, so that the lines of that kind are pinned exactly.
std::vector<std::string> fresh_expectations(const Case& c, const Outcome& outcome);

// `text` (the case file) with `c`'s expectation lines removed and `lines` put at the end
// of the case.
std::string replace_expectations(const std::string& text, const Case& c, const std::vector<std::string>& lines);

}  // namespace mpk::golden
