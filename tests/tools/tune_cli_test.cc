// `mpk tune` end to end through the built binary: a small budget on the tiny preset writes
// the best schedule (a module that loads and verifies), the default and the finalists as
// runs in trace.db, every candidate as CSV, JSON and SVG; a bad budget is one error line.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>

#include "ir/serialize.h"
#include "ir/verifier.h"
#include "tests/hostile/hostile_fixture.h"
#include "traces/trace_db.h"

namespace mpk {
namespace {

using Tune = hostile::HostileTest;

TEST_F(Tune, SmallBudgetWritesTheBestScheduleRunsAndResultFiles) {
  const std::string best = path("best.mpk"), db = path("tune.db"), report = path("cands");
  const hostile::CliResult r =
      run("mpk", "tune --model tiny --budget 20 --steps 4 --search-steps 2 --finalists 2 -o '" + best +
                     "' --trace '" + db + "' --report '" + report + "'",
          120);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("best: candidate "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("assign-sm.policy"), std::string::npos) << r.out;  // the space is listed
  EXPECT_TRUE(verify_module(load_module(best)).empty());

  const std::vector<RunRecord> runs = TraceReader(db).runs();
  ASSERT_GE(runs.size(), 2u);  // the default and at least one finalist
  for (const RunRecord& x : runs) EXPECT_EQ(x.options.rfind("tune ", 0), 0u) << x.options;
  EXPECT_TRUE(std::any_of(runs.begin(), runs.end(),
                          [](const RunRecord& x) { return x.options.find("(default)") != std::string::npos; }));

  const std::string csv = read(report + ".csv");
  const size_t lines = static_cast<size_t>(std::count(csv.begin(), csv.end(), '\n'));
  EXPECT_GE(lines, 3u) << csv;  // the header, the default, a candidate
  const nlohmann::json j = nlohmann::json::parse(read(report + ".json"));
  EXPECT_EQ(j["rows"].size() + 1, lines);
  EXPECT_EQ(j["rows"][0]["note"], "default");
  EXPECT_NE(read(report + ".svg").find("</svg>"), std::string::npos);
}

TEST_F(Tune, BadArgumentsAreOneErrorLine) {
  expect_refused(run("mpk", "tune --model tiny --budget 10x"), "option '--budget' expects a time");
  expect_refused(run("mpk", "tune --budget 10"), "missing --model");
  expect_refused(run("mpk", "tune --model nosuchmodel --budget 5"), "nosuchmodel");
}

}  // namespace
}  // namespace mpk
