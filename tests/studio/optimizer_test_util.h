// Shared by the visual optimizer's tests (schedule_edit, pipeline_runner,
// pipeline_panel): a per-test temporary directory, running the built `mpk` and
// `mpk-opt` binaries (MPK_BINARY_DIR/tools), scheduling a preset in process the way
// mpk-opt does, and comparing what two trace.db runs hold.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "ir/import/import.h"
#include "ir/serialize.h"
#include "ir/verifier.h"
#include "passes/pass_manager.h"
#include "traces/trace_db.h"

namespace mpk::studio::testing {

namespace fs = std::filesystem;

struct CommandResult {
  int status = -1;  // exit status; -1 when killed by a signal
  std::string out, err;
};

class OptimizerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("mpk_optimizer_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  static std::string bin(const std::string& tool) {
    return std::string(MPK_BINARY_DIR) + "/tools/" + tool;
  }

  static std::string read(const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }

  // Runs `tool args` (shell words, quoted by the caller where needed).
  CommandResult run_tool(const std::string& tool, const std::string& args) const {
    if (!fs::exists(bin(tool))) {
      ADD_FAILURE() << bin(tool) << " is missing: build the mpk and mpk-opt targets";
      return {};
    }
    const std::string out = path("stdout"), err = path("stderr");
    const std::string cmd = "'" + bin(tool) + "' " + args + " >'" + out + "' 2>'" + err + "'";
    const int raw = std::system(cmd.c_str());
    CommandResult r;
    r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
    r.out = read(out);
    r.err = read(err);
    return r;
  }

  fs::path dir_;
};

// `preset` imported and run through `pipeline`, as mpk-opt does it.
inline Module scheduled_preset(const std::string& preset, const std::string& pipeline) {
  Module m = import_model(preset, ImportOptions{});
  PassManager(parse_pipeline(pipeline)).run(m);
  verify_or_throw(m);
  return m;
}

// True when both hold the same executions (in any order); says how they differ if not.
inline ::testing::AssertionResult same_executions(std::vector<Execution> a,
                                                   std::vector<Execution> b) {
  auto key = [](const Execution& x) {
    return std::tuple(x.worker, x.start_ns, x.task, x.step, x.wait_begin_ns, x.end_ns, x.sm);
  };
  auto by_key = [&](const Execution& x, const Execution& y) { return key(x) < key(y); };
  std::sort(a.begin(), a.end(), by_key);
  std::sort(b.begin(), b.end(), by_key);
  if (a.size() != b.size())
    return ::testing::AssertionFailure() << a.size() << " executions against " << b.size();
  for (size_t i = 0; i < a.size(); ++i)
    if (key(a[i]) != key(b[i]))
      return ::testing::AssertionFailure()
             << "execution " << i << ": task " << a[i].task << " step " << a[i].step
             << " on worker " << a[i].worker << " at " << a[i].start_ns << " against task "
             << b[i].task << " step " << b[i].step << " on worker " << b[i].worker << " at "
             << b[i].start_ns;
  return ::testing::AssertionSuccess();
}

// Expects two stored runs to hold the same scheduled graph (the same stored module, byte
// for byte) and the same executions.
inline void expect_same_run(const TraceReader& a, int64_t run_a, const TraceReader& b,
                            int64_t run_b) {
  const Module ga = a.load_graph(run_a), gb = b.load_graph(run_b);
  EXPECT_EQ(ga.graph.schedule.policy, gb.graph.schedule.policy);
  EXPECT_EQ(ga.graph.schedule.workers, gb.graph.schedule.workers);
  EXPECT_EQ(ga.provenance.pipeline, gb.provenance.pipeline);
  ASSERT_EQ(ga.graph.tasks.size(), gb.graph.tasks.size());
  ASSERT_EQ(ga.graph.events.size(), gb.graph.events.size());
  for (size_t e = 0; e < ga.graph.events.size(); ++e) {
    EXPECT_EQ(ga.graph.events[e].producers, gb.graph.events[e].producers) << "event " << e;
    EXPECT_EQ(ga.graph.events[e].consumers, gb.graph.events[e].consumers) << "event " << e;
  }
  EXPECT_EQ(a.run(run_a).policy_params, b.run(run_b).policy_params);
  EXPECT_TRUE(same_executions(a.executions(run_a), b.executions(run_b)));
  const std::optional<Module> ma = a.stored_module(run_a), mb = b.stored_module(run_b);
  ASSERT_TRUE(ma && mb);
  EXPECT_TRUE(module_to_binary(*ma) == module_to_binary(*mb)) << "the stored modules differ";
}

}  // namespace mpk::studio::testing
