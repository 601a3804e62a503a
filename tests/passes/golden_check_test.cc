// The golden case-file checker (golden_check.h): parsing and its errors, whole-line
// patterns with {{regex}} parts, CHECK / CHECK-NEXT / CHECK-NOT / ERROR matching and the
// failures it reports, and fresh expectations that pin exactly the lines of their kinds.
#include "tests/passes/golden_check.h"

#include <gtest/gtest.h>

#include "ir/error.h"

namespace mpk::golden {
namespace {

const std::string kFile =
    "// CASE: first\n"          // 1
    "// RUN: infer-deps\n"      // 2
    "# a comment\n"             // 3
    "mpk.module \"a\" ir_version=1\n"  // 4
    "// CHECK: event 0 {{.*}}\n"       // 5
    "// CHECK-NOT: event 1 {{.*}}\n"   // 6
    "// -----\n"                       // 7
    "// CASE: second_one\n"            // 8
    "// RUN: assign-sm{policy=fastest}\n"  // 9
    "mpk.module \"b\" ir_version=1\n"      // 10
    "// ERROR: pass 'assign-sm'{{.*}}\n";  // 11

// Case `first` of kFile, with its expectations replaced by `checks` (lines 5.. of the file).
Case case_with(const std::string& checks) {
  return parse_case_file("// CASE: c\n// RUN: p\nmpk.module \"a\" ir_version=1\n" + checks, "t.mpkt").front();
}

std::string parse_error(const std::string& text) {
  try {
    parse_case_file(text, "bad.mpkt");
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

const Outcome kOut{false,
                   "mpk.module \"a\" ir_version=1\n"
                   "task 0 = a:rope reads(x[0:1]) writes(y[0:1]) bytes=1 flops=0 {}\n"
                   "event 0 target=1 distance=0 producers(0) consumers(1)\n"
                   "event 1 target=1 distance=1 producers(1) consumers(0)\n"
                   "schedule \"round-robin\" {workers=2}\n"};

TEST(GoldenCheck, ParsesCasesAndKeepsFileLineNumbers) {
  const std::vector<Case> cases = parse_case_file(kFile, "t.mpkt");
  ASSERT_EQ(cases.size(), 2u);
  EXPECT_EQ(cases[0].name, "first");
  EXPECT_EQ(cases[0].pipeline, "infer-deps");
  EXPECT_EQ(cases[0].first_line, 1);
  EXPECT_EQ(cases[0].last_line, 6);
  ASSERT_EQ(cases[0].expectations.size(), 2u);
  EXPECT_EQ(cases[0].expectations[1].directive, Directive::kCheckNot);
  EXPECT_EQ(cases[0].expectations[1].pattern, "event 1 {{.*}}");
  EXPECT_EQ(cases[0].expectations[1].line, 6);
  EXPECT_EQ(cases[0].input, "\n\n# a comment\nmpk.module \"a\" ir_version=1\n\n\n\n\n\n\n\n");
  EXPECT_EQ(cases[1].name, "second_one");
  EXPECT_EQ(cases[1].first_line, 8);
  EXPECT_EQ(cases[1].expectations[0].directive, Directive::kError);
  EXPECT_EQ(cases[1].input, std::string(9, '\n') + "mpk.module \"b\" ir_version=1\n\n");
}

TEST(GoldenCheck, MalformedFilesAreRefusedWithFileAndLine) {
  const std::string head = "// CASE: c\n// RUN: p\n";
  EXPECT_EQ(parse_error(head + "// CHEKC: x\n"),
            "bad.mpkt:3: unknown directive '// CHEKC: x' (CASE, RUN, CHECK, CHECK-NEXT, CHECK-NOT, ERROR or -----)");
  EXPECT_EQ(parse_error("// CASE: c\n// CHECK: x\n"), "bad.mpkt:1: case 'c' has no '// RUN: <pipeline>'");
  EXPECT_EQ(parse_error("// RUN: p\n// CHECK: x\n"), "bad.mpkt:1: a case without '// CASE: <name>'");
  EXPECT_EQ(parse_error(head), "bad.mpkt:1: case 'c' expects nothing (add CHECK or ERROR lines)");
  EXPECT_EQ(parse_error(head + "// CHECK: x\n// -----\n" + head + "// CHECK: y\n"),
            "bad.mpkt:5: case name 'c' used twice");
  EXPECT_EQ(parse_error(head + "// CHECK: x\n// -----\n"), "bad.mpkt:5: a case without '// CASE: <name>'");
  EXPECT_EQ(parse_error(head + "// CHECK-NOT: x\n// CHECK-NEXT: y\n"), "bad.mpkt:4: CHECK-NEXT with no CHECK before it");
  EXPECT_EQ(parse_error(head + "// ERROR: x\n// CHECK: y\n"),
            "bad.mpkt:3: case 'c': an ERROR case has one ERROR line and no CHECK lines");
  EXPECT_EQ(parse_error(head + "// CHECK: a{{b\n"), "bad.mpkt:3: '{{' without '}}' in pattern \"a{{b\"");
  EXPECT_NE(parse_error(head + "// CHECK: {{(}}\n").find("bad.mpkt:3: bad regex"), std::string::npos);
  EXPECT_EQ(parse_error("// CASE: Bad-Name\n"), "bad.mpkt:1: case name 'Bad-Name' is not [a-z0-9_]+");
  EXPECT_EQ(parse_error(head + "// RUN: q\n"), "bad.mpkt:3: a second RUN in one case");
}

TEST(GoldenCheck, PatternsMatchWholeLinesWithRegexParts) {
  EXPECT_TRUE(pattern_matches("op a = rope(x) -> (y) layer=-1 {}", "op a = rope(x) -> (y) layer=-1 {}"));
  EXPECT_FALSE(pattern_matches("event 1 target=1", "event 1 target=12"));     // whole lines only
  EXPECT_FALSE(pattern_matches("event 1 target=1", "xevent 1 target=1"));
  EXPECT_FALSE(pattern_matches("a.b", "axb"));                                 // '.' is literal outside {{ }}
  EXPECT_TRUE(pattern_matches("task {{[0-9]+}} = a:rope{{.*}}", "task 12 = a:rope reads()"));
  EXPECT_FALSE(pattern_matches("task {{[0-9]+}} = a", "task x = a"));
  EXPECT_TRUE(pattern_matches("{{\\{\\{}}x", "{{x"));
}

TEST(GoldenCheck, MatchingFollowsFileCheck) {
  EXPECT_EQ(match_case(case_with("// CHECK: event 0 {{.*}}\n// CHECK-NEXT: event 1 {{.*}}\n"), kOut, "t"), "");
  EXPECT_EQ(match_case(case_with("// CHECK-NOT: op {{.*}}\n// CHECK: event 1 {{.*}}\n"), kOut, "t"), "");
  // CHECK skips lines; CHECK-NEXT does not.
  EXPECT_EQ(match_case(case_with("// CHECK: task 0 {{.*}}\n// CHECK: event 1 {{.*}}\n"), kOut, "t"), "");
  const std::string next = match_case(case_with("// CHECK: task 0 {{.*}}\n// CHECK-NEXT: event 1 {{.*}}\n"), kOut, "t");
  EXPECT_EQ(next.rfind("t:5: case 'c': CHECK-NEXT: event 1 {{.*}}\n"
                       "    output line 3 (the next one) is: event 0 target=1 distance=0 producers(0) consumers(1)\n"
                       "output of 'p':\n1: mpk.module",
                       0),
            0u)
      << next;
  // CHECK-NOT applies between its neighbours' matches, or up to the end.
  EXPECT_NE(match_case(case_with("// CHECK: task 0 {{.*}}\n// CHECK-NOT: event 0 {{.*}}\n// CHECK: event 1 {{.*}}\n"),
                       kOut, "t")
                .find("t:5: case 'c': CHECK-NOT: event 0 {{.*}}\n    output line 3 matches: event 0"),
            std::string::npos);
  EXPECT_EQ(match_case(case_with("// CHECK: event 0 {{.*}}\n// CHECK-NOT: task {{.*}}\n"), kOut, "t"), "");
  EXPECT_NE(match_case(case_with("// CHECK: event 0 {{.*}}\n// CHECK-NOT: event {{.*}}\n"), kOut, "t"), "");
  const std::string missing = match_case(case_with("// CHECK: event 2 {{.*}}\n"), kOut, "t");
  EXPECT_EQ(missing.rfind("t:4: case 'c': CHECK: event 2 {{.*}}\n    no output line from line 1 on matches\n", 0), 0u)
      << missing;
  // A failing pipeline fails every CHECK case; an ERROR case needs the failure and its message.
  const Outcome error{true, "pass 'x' failed: no"};
  EXPECT_NE(match_case(case_with("// CHECK: event 0 {{.*}}\n"), error, "t").find("the pipeline failed: pass 'x'"),
            std::string::npos);
  EXPECT_EQ(match_case(case_with("// ERROR: pass 'x' failed: no\n"), error, "t"), "");
  EXPECT_NE(match_case(case_with("// ERROR: pass 'x' failed: yes\n"), error, "t").find("failed with: pass 'x'"),
            std::string::npos);
  EXPECT_NE(match_case(case_with("// ERROR: pass 'x' failed: no\n"), kOut, "t").find("the pipeline succeeded"),
            std::string::npos);
}

TEST(GoldenCheck, FreshExpectationsPinTheLinesOfTheirKinds) {
  const Case c = case_with("// CHECK: event 5 {{.*}}\n");
  const std::vector<std::string> fresh = fresh_expectations(c, kOut);
  EXPECT_EQ(fresh, (std::vector<std::string>{
                       "// CHECK: event 0 target=1 distance=0 producers(0) consumers(1)",
                       "// CHECK-NEXT: event 1 target=1 distance=1 producers(1) consumers(0)",
                       "// CHECK-NOT: event {{.*}}",
                   }));
  std::string checks;
  for (const std::string& l : fresh) checks += l + "\n";
  const Case renewed = case_with(checks);
  EXPECT_EQ(match_case(renewed, kOut, "t"), "");
  // Any change to an event line, or one more anywhere after them, fails them.
  Outcome changed = kOut;
  changed.text.replace(changed.text.find("consumers(1)\n"), 13, "consumers(1, 2)\n");
  EXPECT_NE(match_case(renewed, changed, "t"), "");
  Outcome extra = kOut;
  extra.text += "event 2 target=1 distance=0 producers(0) consumers(0)\n";
  EXPECT_NE(match_case(renewed, extra, "t"), "");
  // Lines of other kinds do not matter.
  Outcome other = kOut;
  other.text.replace(other.text.find("flops=0"), 7, "flops=9");
  EXPECT_EQ(match_case(renewed, other, "t"), "");
  // No kind named: every kind but the header; a kind without lines: only its CHECK-NOT.
  const std::vector<std::string> all = fresh_expectations(case_with("// ERROR: x\n"), kOut);
  EXPECT_EQ(all.front(), "// CHECK-NOT: tensor {{.*}}");
  EXPECT_EQ(all[2], "// CHECK: task 0 = a:rope reads(x[0:1]) writes(y[0:1]) bytes=1 flops=0 {}");
  EXPECT_EQ(all.back(), "// CHECK-NOT: worker {{.*}}");
  EXPECT_EQ(fresh_expectations(c, Outcome{true, "bad {{x}}"}), std::vector<std::string>{"// ERROR: bad {{\\{\\{}}x}}"});
}

TEST(GoldenCheck, ReplaceExpectationsRewritesOneCase) {
  const std::vector<Case> cases = parse_case_file(kFile, "t.mpkt");
  const std::string text = replace_expectations(kFile, cases[0], {"// CHECK: new"});
  EXPECT_EQ(text,
            "// CASE: first\n// RUN: infer-deps\n# a comment\nmpk.module \"a\" ir_version=1\n// CHECK: new\n"
            "// -----\n// CASE: second_one\n// RUN: assign-sm{policy=fastest}\nmpk.module \"b\" ir_version=1\n"
            "// ERROR: pass 'assign-sm'{{.*}}\n");
  const std::vector<Case> again = parse_case_file(text, "t.mpkt");
  EXPECT_EQ(again[0].expectations.size(), 1u);
  EXPECT_EQ(again[1].expectations[0].line, 10);
}

}  // namespace
}  // namespace mpk::golden
