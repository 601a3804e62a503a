// Tests of studio/model/pipeline_runner.h: the run a job stores equals (same schedule, same
// graph, same stored module, same simulated executions) what the built binaries store
// for the same pipeline (`mpk-opt INPUT --pass-pipeline=P -o out.mpk`, then `mpk run
// --backend sim --model out.mpk`), from a trace run (INPUT: the module the trace stored
// with it) and from a .mpk file; an empty pipeline re-runs a run's stored module; a run
// of a trace written before modules were stored is rebuilt, saying so; progress names
// the pass running; a job can be cancelled and then stores nothing; bad pipelines and
// sources fail with a message; a job calibrates the costs from a run and stores the
// run's own schedule simulated under them (the baseline) before the new run.
#include "studio/model/pipeline_runner.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <chrono>
#include <future>
#include <thread>

#include "tests/traces/aged_trace.h"
#include "driver/calibrate_run.h"
#include "ir/error.h"
#include "ir/serialize.h"
#include "tests/studio/optimizer_test_util.h"
#include "passes/pipeline.h"
#include "tests/studio/panel_test_runs.h"
#include "traces/calibrate.h"
#include "traces/simulator.h"

namespace mpk::studio {
namespace {

namespace fs = std::filesystem;
using testing::CommandResult;
using testing::OptimizerTest;

class PipelineRunnerTest : public OptimizerTest {
 protected:
  // Runs `r` to its end, polling as the UI does; returns the last progress seen.
  RunnerProgress run_job(PipelineRunner& runner, PipelineRequest r) {
    runner.start(std::move(r));
    RunnerProgress p = runner.progress();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (p.busy() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      p = runner.progress();
    }
    return p;
  }

  // The CLI's run of `pipeline` over `input` (a preset or a .mpk), in its own trace.db.
  std::string cli_run(const std::string& input, const std::string& pipeline, int steps) {
    const std::string out = path("cli.mpk"), trace = path("cli.db");
    CommandResult r = run_tool("mpk-opt", "'" + input + "' --pass-pipeline='" + pipeline +
                                              "' -o '" + out + "'");
    EXPECT_EQ(r.status, 0) << r.err;
    r = run_tool("mpk", "run --backend sim --model '" + out + "' --steps " +
                            std::to_string(steps) + " --trace '" + trace + "'");
    EXPECT_EQ(r.status, 0) << r.err;
    return trace;
  }
};

TEST_F(PipelineRunnerTest, RunFromATraceRunEqualsTheCli) {
  const std::string trace = path("trace.db");
  CommandResult r =
      run_tool("mpk", "run --backend sim --model tiny --steps 4 --trace '" + trace + "'");
  ASSERT_EQ(r.status, 0) << r.err;
  // The run's fusions, another decompose and policy: its task graph is re-derived.
  const std::string pipeline = std::string(kDefaultFusions) +
      ",decompose{tile=16},infer-deps,assign-sm{policy=locality,slack-scale=0.5}";

  PipelineRunner runner;
  PipelineRequest req;
  req.source.trace_path = trace;
  req.source.run = 1;
  req.pipeline = pipeline;
  req.trace_path = trace;
  req.steps = 4;
  req.note = "studio: from run 1";
  const RunnerProgress p = run_job(runner, req);
  ASSERT_EQ(p.stage, RunnerStage::kDone) << p.text();
  EXPECT_EQ(p.run, 2);
  EXPECT_NE(p.text().find("done: run 2 in "), std::string::npos) << p.text();

  const std::optional<RunnerResult> result = runner.take_result();
  ASSERT_TRUE(result);
  EXPECT_FALSE(runner.take_result());
  EXPECT_EQ(result->run, 2);
  EXPECT_EQ(result->model, "tiny");
  EXPECT_EQ(result->module->graph.schedule.policy, "locality");

  const TraceReader mine(trace);
  const RunRecord rec = mine.run(2);
  EXPECT_EQ(rec.pipeline, pipeline);
  EXPECT_EQ(rec.model, "tiny");
  EXPECT_EQ(rec.steps, 4);
  EXPECT_NE(rec.options.find("studio: from run 1"), std::string::npos) << rec.options;
  // The very module that compiling the model with the pipeline gives.
  const TraceReader cli(cli_run("tiny", pipeline, 4));
  testing::expect_same_run(mine, 2, cli, cli.last_run());
  EXPECT_EQ(mine.load_graph(2).graph.schedule.workers, result->module->graph.schedule.workers);

  // Without program passes, the pipeline starts from the run's program as it is (fused).
  req.pipeline = "decompose{tile=16},infer-deps,assign-sm{policy=locality,slack-scale=0.5}";
  ASSERT_EQ(run_job(runner, req).stage, RunnerStage::kDone) << runner.progress().text();
  EXPECT_EQ(TraceReader(trace).run(3).pipeline, pipeline);

  // Program passes that are not the run's would need its program un-fused: refused.
  req.pipeline = "fuse-norm,decompose{tile=16},infer-deps,assign-sm{policy=locality}";
  const RunnerProgress refused = run_job(runner, req);
  EXPECT_EQ(refused.stage, RunnerStage::kFailed);
  EXPECT_NE(refused.error.find("the pipeline's passes before decompose ('fuse-norm') do not start with "
                               "the module's ('fuse-residual,"), std::string::npos) << refused.error;

  // A pipeline without decompose runs over the run's task graph as it is.
  req.pipeline = "assign-sm{policy=round-robin}";
  ASSERT_EQ(run_job(runner, req).stage, RunnerStage::kDone) << runner.progress().text();
  EXPECT_EQ(TraceReader(trace).run(4).pipeline, mine.run(1).pipeline + ",assign-sm{policy=round-robin}");
}

TEST_F(PipelineRunnerTest, RunFromAModuleFileEqualsTheCliAndMpkRunGraph) {
  const std::string input = path("in.mpk");
  ASSERT_EQ(run_tool("mpk", "import --model tiny-qwen3 -o '" + input + "'").status, 0);
  const std::string pipeline =
      "decompose,infer-deps,assign-sm{base=round-robin,moves=13>w2@after:10;1>w3@first,"
      "policy=pinned,workers=4}";
  PipelineRunner runner;
  PipelineRequest req;
  req.source.module_path = input;
  req.pipeline = pipeline;
  req.trace_path = path("mine.db");
  req.steps = 3;
  ASSERT_EQ(run_job(runner, req).stage, RunnerStage::kDone) << runner.progress().text();
  const TraceReader mine(path("mine.db"));
  EXPECT_EQ(mine.run(1).model, input);
  EXPECT_EQ(mine.run(1).policy, "pinned");
  const TraceReader cli(cli_run(input, pipeline, 3));
  testing::expect_same_run(mine, 1, cli, cli.last_run());

  // The same schedule saved and run with --graph.
  save_module(*runner.take_result()->module, path("saved.mpk"), Format::kBinary);
  const CommandResult r = run_tool("mpk", "run --backend sim --graph '" + path("saved.mpk") +
                                              "' --steps 3 --trace '" + path("graph.db") + "'");
  ASSERT_EQ(r.status, 0) << r.err;
  const TraceReader graph(path("graph.db"));
  testing::expect_same_run(mine, 1, graph, 1);
}

TEST_F(PipelineRunnerTest, EmptyPipelineReRunsTheStoredModule) {
  const std::string trace = path("trace.db");
  ASSERT_EQ(run_tool("mpk", "run --backend sim --model tiny --policy round-robin --steps 2 "
                            "--trace '" + trace + "'").status, 0);
  PipelineRunner runner;
  PipelineRequest req;
  req.source = {"", trace, 1, nullptr};
  req.trace_path = trace;
  req.steps = 2;
  const RunnerProgress p = run_job(runner, req);
  ASSERT_EQ(p.stage, RunnerStage::kDone) << p.text();
  EXPECT_EQ(runner.take_result()->note, "");
  const TraceReader reader(trace);
  testing::expect_same_run(reader, 1, reader, 2);
  EXPECT_EQ(reader.run(2).graph, reader.run(1).graph);  // the very same graph row

  // Not storing: the result only.
  req.trace_path.clear();
  ASSERT_EQ(run_job(runner, req).stage, RunnerStage::kDone);
  EXPECT_EQ(runner.take_result()->run, -1);
  EXPECT_EQ(TraceReader(trace).runs().size(), 2u);
}

TEST_F(PipelineRunnerTest, CalibratesFromTheRunAndStoresItsScheduleUnderTheSameCosts) {
  const std::string trace = path("gpu.db");
  ASSERT_EQ(mpk::testing::store_gpu_like_tiny(trace, 3, 8), 1);  // kind gpu
  PipelineRunner runner;
  PipelineRequest req;
  req.source = {"", trace, 1, nullptr};
  req.pipeline = "assign-sm{policy=round-robin}";
  req.trace_path = trace;
  req.steps = 3;
  req.costs_path = path("costs.json");
  req.calibrate = true;
  req.baseline = true;
  req.baseline_note = "studio: the baseline";
  const RunnerProgress p = run_job(runner, req);
  ASSERT_EQ(p.stage, RunnerStage::kDone) << p.text();
  const std::optional<RunnerResult> r = runner.take_result();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->baseline_run, 2);
  EXPECT_EQ(r->run, 3);
  EXPECT_EQ(r->costs, req.costs_path);

  // The cost file is the fit of run 1, and both runs are simulations under it: the
  // baseline of run 1's own module, the new run of the new schedule.
  const TraceReader reader(trace);
  const Module source = *reader.stored_module(1);
  const CostParams fitted = load_cost_params(req.costs_path, CostParams::from_machine(source.machine));
  EXPECT_EQ(format_cost_params(fitted), format_cost_params(calibrate_run(trace, 1, source)));
  EXPECT_TRUE(testing::same_executions(reader.executions(2), simulate(source, fitted, 3)));
  EXPECT_TRUE(testing::same_executions(reader.executions(3), simulate(*r->module, fitted, 3)));
  EXPECT_DOUBLE_EQ(r->baseline_step_ns, mean_step_ns(reader.executions(2), 3));
  EXPECT_DOUBLE_EQ(r->step_ns, mean_step_ns(reader.executions(3), 3));
  for (int64_t run : {2, 3})
    EXPECT_NE(reader.run(run).options.find("costs=" + req.costs_path), std::string::npos);
  EXPECT_NE(reader.run(2).options.find("studio: the baseline"), std::string::npos);
  EXPECT_EQ(reader.run(2).policy, reader.run(1).policy);
  EXPECT_EQ(reader.run(3).policy, "round-robin");
}

TEST_F(PipelineRunnerTest, RunOfAnOldTraceIsRebuiltSayingSo) {
  // A trace as schema 1 wrote it: no stored modules.
  const std::string trace = path("old.db");
  ASSERT_EQ(run_tool("mpk", "run --backend sim --model tiny --policy locality --steps 2 "
                            "--trace '" + trace + "'").status, 0);
  mpk::testing::age_to_schema(trace, 1);
  PipelineRunner runner;
  PipelineRequest req;
  req.source = {"", trace, 1, nullptr};
  req.trace_path = trace;
  req.steps = 2;
  ASSERT_EQ(run_job(runner, req).stage, RunnerStage::kDone) << runner.progress().text();
  const std::optional<RunnerResult> r = runner.take_result();
  EXPECT_NE(r->note.find("re-imported"), std::string::npos) << r->note;
  const TraceReader reader(trace);
  EXPECT_EQ(reader.load_graph(2).graph.schedule.workers, reader.load_graph(1).graph.schedule.workers);
  EXPECT_FALSE(reader.stored_module(1));
  EXPECT_TRUE(reader.stored_module(2));
}

TEST_F(PipelineRunnerTest, ProgressNamesThePassAndCancelStoresNothing) {
  const std::string trace = path("trace.db");
  PipelineRunner runner;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::promise<RunnerProgress> seen;
  PipelineRequest req;
  req.source.module = std::make_shared<const Module>(import_model("tiny", ImportOptions{}));
  req.pipeline = "decompose,infer-deps,assign-sm{policy=critical-path}";
  req.trace_path = trace;
  req.steps = 2;
  req.finish = [&](Module&) {
    seen.set_value(runner.progress());
    released.wait();
  };
  runner.start(req);
  const RunnerProgress during = seen.get_future().get();
  EXPECT_EQ(during.stage, RunnerStage::kPasses);
  EXPECT_EQ(during.text(), "pass 3 of 3: assign-sm");
  EXPECT_TRUE(runner.busy());
  EXPECT_THROW(runner.start(req), Error);  // one job at a time
  runner.cancel();
  release.set_value();
  runner.wait();
  EXPECT_EQ(runner.progress().stage, RunnerStage::kCancelled);
  EXPECT_EQ(runner.progress().text(), "cancelled");
  EXPECT_FALSE(runner.take_result());
  EXPECT_FALSE(fs::exists(trace));

  // The runner takes the next job.
  req.finish = nullptr;
  ASSERT_EQ(run_job(runner, req).stage, RunnerStage::kDone);
  EXPECT_EQ(TraceReader(trace).runs().size(), 1u);
}

TEST_F(PipelineRunnerTest, BadPipelinesAndSourcesFailWithAMessage) {
  PipelineRunner runner;
  PipelineRequest req;
  req.source.module = std::make_shared<const Module>(import_model("tiny", ImportOptions{}));
  req.pipeline = "decompose{";
  EXPECT_THROW(runner.start(req), Error);
  req.pipeline = "decompose,fuse-all";
  try {
    runner.start(req);
    ADD_FAILURE() << "started an unknown pass";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown pass 'fuse-all'"), std::string::npos);
  }
  EXPECT_EQ(runner.progress().stage, RunnerStage::kIdle);

  req.pipeline = "decompose,infer-deps";
  RunnerProgress p = run_job(runner, req);
  EXPECT_EQ(p.stage, RunnerStage::kFailed);
  EXPECT_NE(p.error.find("has no schedule"), std::string::npos) << p.error;

  req.source = {path("missing.mpk"), "", -1, nullptr};
  req.pipeline = "decompose,infer-deps,assign-sm";
  p = run_job(runner, req);
  EXPECT_EQ(p.stage, RunnerStage::kFailed);
  EXPECT_NE(p.error.find("missing.mpk"), std::string::npos) << p.error;

  req.source = {"", path("missing.db"), 1, nullptr};
  p = run_job(runner, req);
  EXPECT_EQ(p.stage, RunnerStage::kFailed);
  EXPECT_NE(p.error.find("missing.db"), std::string::npos) << p.error;
}

}  // namespace
}  // namespace mpk::studio
