// Validation of the cost model by leaving one (model, policy) pair out: runs the
// simulator made with known costs, stored in a trace.db and read back, are predicted by
// costs calibrated without them; and the GPU runs recorded on the H100 under tests/data
// (tests/data/gpu/tiny-h100.db: tiny and tiny-qwen3 under the seven policies, 4 steps,
// `device_check.sh tinytraces`) are predicted as docs/benchmarks.md reports: each pair's
// step time within 10 %, and every two policies the GPU separates by more than 3 % in the
// measured order. (llama-3.2-1b's and qwen3-8b's traces, where the bar is 5 %, are too large
// to keep here; their figures are in docs/benchmarks.md.)
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "ir/import/import.h"
#include "passes/pass_manager.h"
#include "passes/pipeline.h"
#include "tests/traces/test_graphs.h"
#include "traces/calibrate.h"
#include "traces/model_error.h"
#include "traces/simulator.h"

namespace mpk {
namespace {

CostParams truth(const MachineModel& m) {
  return parse_cost_params(R"({"event_latency_ns": 700, "fanout_ns": 6, "dispatch_ns": 120,
      "step_ns": 1500, "prefetch_bytes": 65536, "positional_cache": true,
      "kinds": {"linear": {"fixed_ns": 900, "bytes_scale": 1.1},
                "attention": {"fixed_ns": 1500, "bytes_scale": 1.3},
                "lm_head": {"fixed_ns": 700, "bytes_scale": 1.05}}})",
                           "truth", CostParams::from_machine(m));
}

// Runs of two models under two policies, simulated with the truth and stored.
std::vector<CalibrationRun> simulated_runs(const std::string& path) {
  TraceWriter writer(path);
  std::vector<int64_t> ids;
  for (const char* model : {"tiny", "tiny-qwen3"})
    for (const char* policy : {"critical-path", "round-robin"}) {
      Module m = import_model(model, ImportOptions{});
      PassManager(parse_pipeline(default_pipeline_with(policy))).run(m);
      RunInfo info;
      info.kind = "sim";
      info.model = model;
      info.steps = 6;
      ids.push_back(writer.write_run(m, info, simulate(m, truth(m.machine), 6)));
    }
  const TraceReader reader(path);
  std::vector<CalibrationRun> runs;
  for (int64_t id : ids) runs.push_back(load_calibration_run(reader, id));
  return runs;
}

TEST(Validate, LeaveOnePairOutPredictsSimulatedRuns) {
  const testing::TempPath db("validate.db");
  const std::vector<CalibrationRun> runs = simulated_runs(db.str());
  const CostParams base = CostParams::from_machine(runs.front().module.machine);
  const std::vector<PairPrediction> pairs = leave_one_pair_out(runs, base);
  ASSERT_EQ(pairs.size(), 4u);
  for (const PairPrediction& p : pairs)
    EXPECT_LT(std::fabs(p.prediction.error()), 0.01) << p.prediction.model << " " << p.prediction.policy;
  const std::vector<Ranking> r = rankings(pairs);
  ASSERT_EQ(r.size(), 2u);
  for (const Ranking& x : r) EXPECT_TRUE(x.same()) << x.model << ": " << x.measured_text();

  // Calibrated on all of them, the model explains every task of every run.
  const Calibration cal = calibrate(runs, base);
  const ModelError err = model_error(runs, cal.params);
  for (const KindError& k : err.kinds) EXPECT_LT(k.p90, 0.02) << name_of(k.kind);
  for (const RunPrediction& p : err.runs) EXPECT_LT(std::fabs(p.error()), 0.005) << p.label;
}

TEST(Validate, RankingsTieWithinHalfAPercent) {
  PairPrediction a, b, c;
  a.prediction = {"", "m", "a", 100.0, 101.0};
  b.prediction = {"", "m", "b", 100.3, 100.0};  // tied with a: either order agrees
  c.prediction = {"", "m", "c", 110.0, 99.0};   // clearly slower, predicted fastest
  EXPECT_TRUE(rankings({a, b}).front().same());
  EXPECT_EQ(rankings({a, b}).front().measured_text(), "a = b");
  EXPECT_FALSE(rankings({a, b, c}).front().same());
}

// Every trace.db under tests/data: its gpu runs (not tensor-parallel launches: those are of
// another machine, tests/traces/rank_trace_test.cc), each (model, policy) pair predicted
// from the others as the header says.
TEST(Validate, RecordedH100TracesArePredictedAsReported) {
  const std::filesystem::path dir = std::filesystem::path(MPK_SOURCE_DIR) / "tests" / "data";
  std::vector<CalibrationRun> runs;
  if (std::filesystem::is_directory(dir))
    for (const auto& f : std::filesystem::recursive_directory_iterator(dir)) {
      if (f.path().extension() != ".db") continue;
      const TraceReader reader(f.path().string());
      for (const RunRecord& r : reader.runs())
        if (r.kind == "gpu" && r.ranks == 1) runs.push_back(load_calibration_run(reader, r.id));
    }
  if (runs.empty()) GTEST_SKIP() << "no recorded gpu runs under " << dir.string();
  const std::vector<PairPrediction> pairs =
      leave_one_pair_out(runs, CostParams::from_machine(runs.front().module.machine));
  ASSERT_GE(pairs.size(), 6u);
  for (const PairPrediction& p : pairs)
    EXPECT_LT(std::fabs(p.prediction.error()), 0.10)
        << p.prediction.model << " " << p.prediction.policy << ": measured "
        << p.prediction.measured_step_ns << " ns, predicted " << p.prediction.predicted_step_ns;
  for (const PairPrediction& a : pairs)
    for (const PairPrediction& b : pairs) {
      const RunPrediction &x = a.prediction, &y = b.prediction;
      if (x.model != y.model || x.measured_step_ns <= y.measured_step_ns * 1.03) continue;
      EXPECT_GT(x.predicted_step_ns, y.predicted_step_ns)
          << x.model << ": " << x.policy << " is slower than " << y.policy << " on the GPU";
    }
}

}  // namespace
}  // namespace mpk
