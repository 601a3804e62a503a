// End-to-end: `mpk run --backend sim`, `mpk trace`, `mpk experiment` and
// `mpk calibrate` on the tiny preset, through the built `mpk` binary (skipped, saying
// so, when it has not been built).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "tests/traces/test_graphs.h"
#include "ir/cost_params.h"
#include "traces/trace_db.h"

namespace mpk {
namespace {

using testing::TempPath;

struct Result {
  int rc = -1;
  std::string out;  // stdout and stderr
};

std::string mpk_binary() { return std::string(MPK_BINARY_DIR) + "/tools/mpk"; }

Result run(const std::string& args) {
  Result r;
  FILE* p = ::popen((mpk_binary() + " " + args + " 2>&1").c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = ::pclose(p);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::ifstream(mpk_binary()).good())
      GTEST_SKIP() << "mpk is not built at " << mpk_binary() << " (build the mpk target)";
  }
};

TEST_F(Cli, SimRunThenStatsDiffAndExport) {
  TempPath db("cli_run.db"), json("cli_run.json");
  Result r = run("run --backend sim --model tiny --steps 3 --trace " + db.str());
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("makespan per step"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("mpk-studio " + db.str()), std::string::npos) << r.out;
  r = run("run --backend sim --model tiny --steps 3 --policy round-robin --trace " + db.str());
  ASSERT_EQ(r.rc, 0) << r.out;
  {
    TraceReader reader(db.str());
    const auto runs = reader.runs();
    ASSERT_EQ(runs.size(), 2u);
    EXPECT_EQ(runs[0].kind, "sim");
    EXPECT_EQ(runs[1].policy, "round-robin");
    EXPECT_EQ(runs[1].steps, 3);
  }
  r = run("trace stats " + db.str() + " --run 1");
  ASSERT_EQ(r.rc, 0) << r.out;
  for (const char* s : {"idle time by cause", "longest waits", "critical path of step"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
  r = run("trace diff " + db.str() + " --run 1 --run 2");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("makespan/step (mean)"), std::string::npos) << r.out;
  r = run("trace export --chrome " + json.str() + " " + db.str());
  ASSERT_EQ(r.rc, 0) << r.out;
  std::ifstream in(json.str());
  const nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_GT(j.at("traceEvents").size(), 10u);
}

TEST_F(Cli, BadFilesGiveOneLineAndNonZeroExit) {
  TempPath junk("cli_junk.db");
  { std::ofstream(junk.str()) << std::string(200, 'j'); }
  Result r = run("trace stats " + junk.str());
  EXPECT_NE(r.rc, 0);
  EXPECT_EQ(r.out, "mpk trace: error: " + junk.str() + ": not a trace.db (not an SQLite database)\n");
  r = run("trace stats " + junk.str() + ".missing");
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.out.find("no such file"), std::string::npos) << r.out;
  r = run("calibrate " + junk.str() + " -o /dev/null");
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.out.find("not a trace.db"), std::string::npos) << r.out;
}

TEST_F(Cli, TracePathPrintsStepsLayersAndCsv) {
  TempPath db("cli_path.db");
  Result r = run("run --backend sim --model tiny --steps 4 --trace " + db.str());
  ASSERT_EQ(r.rc, 0) << r.out;
  r = run("trace path " + db.str() + " --top 0");
  ASSERT_EQ(r.rc, 0) << r.out;
  for (const char* s : {"step 1  critical path", "step 3  critical path", "run lm_head.argmax_reduce", "total"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
  EXPECT_EQ(r.out.find("step 0  critical path"), std::string::npos) << r.out;
  r = run("trace path " + db.str() + " --step 2 --top 3");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("step 2  critical path"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("shorter segments)"), std::string::npos) << r.out;
  r = run("trace path " + db.str() + " --layers");
  ASSERT_EQ(r.rc, 0) << r.out;
  for (const char* s : {"critical path per decoder layer: mean of 3 instances (steps 1..3, layers 1..1)",
                        "layer period", "outside the layers", "run embed", "3/3"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
  r = run("trace path " + db.str() + " --layers --csv --steps 1:2");
  ASSERT_EQ(r.rc, 0) << r.out;
  std::istringstream lines(r.out);
  std::string line;
  std::getline(lines, line);
  EXPECT_EQ(line, "section,step,position,kind,segment,us,share,instances,of");
  int rows = 0;
  while (std::getline(lines, line)) {
    ++rows;
    EXPECT_EQ(std::count(line.begin(), line.end(), ','), 8) << line;
    EXPECT_TRUE(line.rfind("layer,,", 0) == 0 || line.rfind("outside,,", 0) == 0) << line;
    EXPECT_EQ(line.substr(line.size() - 2), ",2") << line;  // means of two steps
  }
  EXPECT_GT(rows, 6);
}

TEST_F(Cli, TracePathBadArgumentsGiveOneLine) {
  TempPath db("cli_path_bad.db"), junk("cli_path_junk.db");
  Result r = run("run --backend sim --model tiny --steps 2 --trace " + db.str());
  ASSERT_EQ(r.rc, 0) << r.out;
  { std::ofstream(junk.str()) << std::string(200, 'j'); }
  const std::pair<std::string, std::string> cases[] = {
      {db.str() + " --run 99", db.str() + ": no run 99"},
      {db.str() + " --step -1", "option '--step' expects a step >= 0, got -1"},
      {db.str() + " --step 5", "run 1 has no step 5 (steps 0..1)"},
      {db.str() + " --steps 2:1", "option '--steps' expects A:B with 0 <= A <= B, got '2:1'"},
      {db.str() + " --top -1", "option '--top' expects a count >= 0"},
      {db.str() + " --step 1 --steps 0:1", "give --step or --steps, not both"},
      {junk.str(), junk.str() + ": not a trace.db"}};
  for (const auto& [args, message] : cases) {
    r = run("trace path " + args);
    EXPECT_NE(r.rc, 0) << args;
    EXPECT_EQ(r.out.rfind("mpk trace: error: " + message, 0), 0u) << args << "\n" << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  }
}

TEST_F(Cli, ExperimentSweepsAndCalibrateFits) {
  TempPath db("cli_exp.db"), costs("cli_costs.json");
  Result r = run("experiment --model tiny --policies round-robin,critical-path --steps 2 "
                 "--set decompose.tile=32,64 -o " + db.str());
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("decompose.tile=64"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("crit busy"), std::string::npos) << r.out;
  {
    TraceReader reader(db.str());
    const auto runs = reader.runs();
    ASSERT_EQ(runs.size(), 4u);
    EXPECT_EQ(runs[3].options.rfind("decompose.tile=64", 0), 0u) << runs[3].options;
  }
  r = run("calibrate " + db.str() + " --run 2 -o " + costs.str());
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("critical-path"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  +0.0 %"), std::string::npos) << r.out;  // a sim run fits itself
  EXPECT_NE(r.out.find("err p90"), std::string::npos) << r.out;

  // Leave one (model, policy) pair out: two pairs of two runs each.
  r = run("calibrate " + db.str() + " --validate");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("leave one (model, policy) pair out"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(same ranking)"), std::string::npos) << r.out;
  r = run("calibrate " + db.str() + ":1 --validate");
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.out.find("at least two (model, policy) pairs"), std::string::npos) << r.out;
  const CostParams p = load_cost_params(costs.str(), CostParams::from_machine(MachineModel{}));
  EXPECT_NE(p.note.find("run 2"), std::string::npos);

  // The fitted costs schedule (assign-sm plans with them) and simulate the next run.
  r = run("run --backend sim --model tiny --steps 2 --policy critical-path --costs " + costs.str() +
          " --trace " + db.str());
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("assign-sm{costs=" + costs.str() + ",policy=critical-path}"), std::string::npos)
      << r.out;
  EXPECT_NE(TraceReader(db.str()).runs().back().options.find("costs=" + costs.str()), std::string::npos);
  r = run("run --backend cpu --model tiny --steps 1 --costs " + costs.str() + ",x");
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.out.find("a path in a pipeline cannot hold"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace mpk
