// Golden tests of the passes: every `tests/passes/golden/<pass>.mpkt` holds cases
// separated by `// -----` (golden_check.h; docs/passes.md, "Golden tests"). Each case's
// module is verified and run through its `// RUN:` pipeline with verify-each, printed
// without the tool version and the machine defaults (ir/text.h PrintOptions), and its
// CHECK / ERROR lines are matched against the result; a failure names the file, the
// line and the case. MPK_UPDATE_GOLDEN=1 rewrites the expectations of failing cases.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "ir/error.h"
#include "ir/text.h"
#include "ir/verifier.h"
#include "passes/pass_manager.h"
#include "tests/passes/golden_check.h"

namespace mpk {
namespace {

namespace fs = std::filesystem;
using golden::Case;
using golden::Outcome;

const fs::path kGoldenDir = fs::path(MPK_SOURCE_DIR) / "tests" / "passes" / "golden";
constexpr const char* kSuffix = ".mpkt";

std::vector<std::string> case_files() {
  std::vector<std::string> stems;
  for (const auto& entry : fs::directory_iterator(kGoldenDir))
    if (entry.path().extension() == kSuffix) stems.push_back(entry.path().stem().string());
  std::sort(stems.begin(), stems.end());
  return stems;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw Error("cannot read " + p.string());
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Verifies the case's module and runs its pipeline. A module that does not parse is a
// broken case file, not an outcome: that throws.
Outcome run_case(const Case& c, const std::string& file) {
  Module m = parse_module(c.input, file);
  PassManagerConfig config;
  config.verify_each = true;
  try {
    verify_or_throw(m);
    PassManager pm(parse_pipeline(c.pipeline), config);
    pm.run(m);
  } catch (const Error& e) {
    return {true, e.what()};
  }
  return {false, print_module(m, PrintOptions{.tool_version = false, .machine_defaults = false})};
}

bool updating() {
  const char* update = std::getenv("MPK_UPDATE_GOLDEN");
  return update && std::string(update) == "1";
}

class Golden : public ::testing::TestWithParam<std::string> {};

TEST_P(Golden, CasesMatchTheirExpectations) {
  const std::string file = GetParam() + kSuffix;
  const fs::path path = kGoldenDir / file;
  std::string text = read_file(path);
  const std::vector<Case> cases = golden::parse_case_file(text, file);
  // Backwards, so that rewriting a case leaves the line numbers of earlier cases valid.
  for (auto c = cases.rbegin(); c != cases.rend(); ++c) {
    const Outcome outcome = run_case(*c, file);
    const std::string failures = golden::match_case(*c, outcome, file);
    if (failures.empty()) continue;
    if (updating())
      text = golden::replace_expectations(text, *c, golden::fresh_expectations(*c, outcome));
    else
      ADD_FAILURE() << failures << "(MPK_UPDATE_GOLDEN=1 rewrites the expectations of failing cases)";
  }
  if (updating()) std::ofstream(path, std::ios::binary) << text;
}

INSTANTIATE_TEST_SUITE_P(Passes, Golden, ::testing::ValuesIn(case_files()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

TEST(GoldenFiles, OneCaseFilePerPassAndNothingElse) {
  size_t cases = 0;
  for (const auto& entry : fs::directory_iterator(kGoldenDir)) {
    const std::string file = entry.path().filename().string();
    ASSERT_EQ(entry.path().extension(), kSuffix) << "stray file " << file;
    cases += golden::parse_case_file(read_file(entry.path()), file).size();
  }
  EXPECT_GE(case_files().size(), 9u);
  EXPECT_GE(cases, 38u);
}

}  // namespace
}  // namespace mpk
