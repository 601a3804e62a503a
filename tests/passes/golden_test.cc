// Golden tests of the passes. Each case is a pair of files in tests/passes/golden/:
// `<case>.mpkt` holds a first line `// RUN: <pipeline>` and then a module in the text
// form (ir/text.h); `<case>.expected.mpkt` holds the text form after running the
// pipeline with verify-each (without the tool version and the machine fields at their
// defaults, ir/text.h PrintOptions), or `error: <message>` when the pipeline must fail. A
// mismatch prints a line diff; MPK_UPDATE_GOLDEN=1 rewrites the expected files.
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

namespace mpk {
namespace {

namespace fs = std::filesystem;

const fs::path kGoldenDir = fs::path(MPK_SOURCE_DIR) / "tests" / "passes" / "golden";
constexpr const char* kRunPrefix = "// RUN: ";
constexpr const char* kInputSuffix = ".mpkt";
constexpr const char* kExpectedSuffix = ".expected.mpkt";

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::vector<std::string> case_names() {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(kGoldenDir)) {
    const std::string file = entry.path().filename().string();
    if (ends_with(file, kInputSuffix) && !ends_with(file, kExpectedSuffix))
      names.push_back(file.substr(0, file.size() - std::string(kInputSuffix).size()));
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw Error("cannot read " + p.string());
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// A line diff from the longest common subsequence: "-" expected only, "+" actual only.
std::string line_diff(const std::string& expected, const std::string& actual) {
  const std::vector<std::string> a = lines_of(expected), b = lines_of(actual);
  std::vector<std::vector<int>> lcs(a.size() + 1, std::vector<int>(b.size() + 1, 0));
  for (size_t i = a.size(); i-- > 0;)
    for (size_t j = b.size(); j-- > 0;)
      lcs[i][j] = a[i] == b[j] ? lcs[i + 1][j + 1] + 1 : std::max(lcs[i + 1][j], lcs[i][j + 1]);
  std::string out;
  size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    if (i < a.size() && j < b.size() && a[i] == b[j]) {
      ++i, ++j;
    } else if (i < a.size() && (j == b.size() || lcs[i + 1][j] >= lcs[i][j + 1])) {
      out += "-" + a[i++] + "\n";
    } else {
      out += "+" + b[j++] + "\n";
    }
  }
  return out;
}

// Runs the case's pipeline; the result text, or "error: ..." when it fails.
std::string run_case(const std::string& name) {
  const fs::path input = kGoldenDir / (name + kInputSuffix);
  std::string text = read_file(input);
  const size_t eol = text.find('\n');
  if (text.rfind(kRunPrefix, 0) != 0)
    throw Error(input.string() + ": the first line must be '" + kRunPrefix + "<pipeline>'");
  const size_t prefix = std::string(kRunPrefix).size();
  const std::string pipeline =
      text.substr(prefix, eol == std::string::npos ? eol : eol - prefix);
  text.replace(0, eol == std::string::npos ? text.size() : eol, "");  // keep line numbers
  Module m = parse_module(text, input.filename().string());
  PassManagerConfig config;
  config.verify_each = true;
  try {
    verify_or_throw(m);
    PassManager pm(parse_pipeline(pipeline), config);
    pm.run(m);
  } catch (const Error& e) {
    return std::string("error: ") + e.what() + "\n";
  }
  return print_module(m, PrintOptions{.tool_version = false, .machine_defaults = false});
}

class Golden : public ::testing::TestWithParam<std::string> {};

TEST_P(Golden, MatchesExpected) {
  const std::string& name = GetParam();
  const std::string actual = run_case(name);
  const fs::path expected_path = kGoldenDir / (name + kExpectedSuffix);
  const char* update = std::getenv("MPK_UPDATE_GOLDEN");
  if (update && std::string(update) == "1") {
    std::ofstream(expected_path, std::ios::binary) << actual;
    return;
  }
  ASSERT_TRUE(fs::exists(expected_path))
      << expected_path << " is missing (MPK_UPDATE_GOLDEN=1 writes it)";
  const std::string expected = read_file(expected_path);
  EXPECT_TRUE(expected == actual) << name << ": output differs from " << expected_path
                                  << " (-expected +actual):\n"
                                  << line_diff(expected, actual);
}

std::string test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string s = info.param;
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(Passes, Golden, ::testing::ValuesIn(case_names()), test_name);

TEST(GoldenFiles, EveryExpectedFileHasAnInput) {
  const std::vector<std::string> names = case_names();
  EXPECT_GE(names.size(), 12u);
  for (const auto& entry : fs::directory_iterator(kGoldenDir)) {
    const std::string file = entry.path().filename().string();
    ASSERT_TRUE(ends_with(file, kInputSuffix)) << "stray file " << file;
    if (!ends_with(file, kExpectedSuffix)) continue;
    const std::string name = file.substr(0, file.size() - std::string(kExpectedSuffix).size());
    EXPECT_TRUE(std::count(names.begin(), names.end(), name)) << file << " has no input";
  }
}

TEST(GoldenFiles, DiffShowsChangedLines) {
  EXPECT_EQ(line_diff("a\nb\nc\n", "a\nx\nc\n"), "-b\n+x\n");
  EXPECT_EQ(line_diff("a\n", "a\nb\n"), "+b\n");
  EXPECT_EQ(line_diff("a\nb\n", "b\n"), "-a\n");
}

}  // namespace
}  // namespace mpk
