// The fixture of the hostile-input tests: each test makes one malformed input in a fresh
// temporary folder, runs a built CLI on it (the release build's, or the sanitizer build's when
// this folder is compiled by scripts/sanitize.sh) under a time limit, and checks the refusal:
// exit status 1, one stderr line "mpk: error: ..." naming the problem, no "internal error", no
// sanitizer report, no hang.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace mpk::hostile {

struct CliResult {
  int status = -1;  // exit status; 124 when the time limit killed it; -1 for a signal
  std::string out, err;
};

class HostileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("mpk_hostile_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    for (const char* tool : {"mpk", "mpk-opt"})
      ASSERT_TRUE(std::filesystem::exists(bin(tool))) << bin(tool) << " is missing: build it first";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  static std::string bin(const std::string& tool) { return std::string(MPK_BINARY_DIR) + "/tools/" + tool; }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  std::string write(const std::string& name, const std::string& content) const {
    std::ofstream(path(name), std::ios::binary) << content;
    return path(name);
  }
  static std::string read(const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }

  // Runs `tool args` (shell words, quoted by the caller) with a wall-clock limit in seconds.
  CliResult run(const std::string& tool, const std::string& args, int limit_s = 30) const {
    const std::string out = path(".stdout"), err = path(".stderr");
    const std::string cmd = "timeout -s KILL " + std::to_string(limit_s) + " '" + bin(tool) + "' " + args +
                            " >'" + out + "' 2>'" + err + "'";
    const int raw = std::system(cmd.c_str());
    CliResult r;
    r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
    if (r.status == 137) r.status = 124;  // timeout -s KILL exits 137 when the limit struck
    r.out = read(out);
    r.err = read(err);
    return r;
  }

  // A refusal: exit 1 and one stderr line naming the problem (PHRASE), with no crash, hang,
  // internal error or sanitizer report.
  static void expect_refused(const CliResult& r, const std::string& phrase) {
    EXPECT_NE(r.status, 124) << "hung past its time limit";
    EXPECT_EQ(r.status, 1) << r.err;
    EXPECT_NE(r.err.find("error: "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(phrase), std::string::npos) << "stderr: " << r.err;
    expect_clean(r);
  }

  // No crash, sanitizer report or internal error, whatever the exit status.
  static void expect_clean(const CliResult& r) {
    EXPECT_NE(r.status, -1) << "killed by a signal: " << r.err;
    EXPECT_NE(r.status, 124) << "hung past its time limit";
    for (const char* bad : {"internal error", "Sanitizer", "runtime error:", "std::bad_alloc"})
      EXPECT_EQ(r.err.find(bad), std::string::npos) << r.err;
  }

  std::filesystem::path dir_;
};

}  // namespace mpk::hostile
