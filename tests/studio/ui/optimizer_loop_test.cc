// The optimizer loop compares like with like (issue 14): Apply and hand edits are measured
// against the source run's own schedule simulated under the same cost model and steps,
// never against a measured run; on a GPU run that cost model is calibrated from the run
// (or a cost file the user picks); the old run is A, the new one B; new runs go to a
// side file NAME.studio.db unless the user chose the opened file; read-only inputs work.
// The built mpk-studio runs Apply from an opened .mpk and from a GPU-shaped run under
// xvfb-run (skipped, saying so, without it); the rest drives the studio's state in
// process, as its frames do.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cmath>
#include <regex>

#include "tests/studio/ui/app_test_fixture.h"
#include "ir/cost_params.h"
#include "studio/model/store_target.h"
#include "tests/studio/panel_test_runs.h"

namespace mpk::studio {
namespace {

namespace fs = std::filesystem;
using testing::CommandResult;

bool have_xvfb() { return std::system("command -v xvfb-run >/dev/null 2>&1") == 0; }

// "A run 2 (run 1's schedule) 21.70 us, B run 3 21.70 us a step (+0.0 %), ..." parsed.
struct Comparison {
  int64_t a = -1, b = -1;
  double a_us = 0, b_us = 0;
};

std::optional<Comparison> parse_comparison(const std::string& text) {
  static const std::regex re(R"(A run (\d+)(?: \(run \d+'s schedule\))? ([0-9.]+) us, B run (\d+) ([0-9.]+) us a step)");
  std::smatch m;
  if (!std::regex_search(text, m, re)) return std::nullopt;
  return Comparison{std::stoll(m[1]), std::stoll(m[3]), std::stod(m[2]), std::stod(m[4])};
}

class OptimizerLoop : public testing::OptimizerTest {
 protected:
  // Runs the built mpk-studio under xvfb-run with --screenshot and `args`.
  CommandResult studio(const std::string& args) const {
    const std::string out = path("studio.out"), err = path("studio.err");
    const std::string cmd = "xvfb-run -a -s '-screen 0 1600x1000x24' '" MPK_BINARY_DIR
                            "/studio/mpk-studio' --screenshot '" + path("shot.png") + "' " + args +
                            " >'" + out + "' 2>'" + err + "'";
    const int raw = std::system(cmd.c_str());
    return {WIFEXITED(raw) ? WEXITSTATUS(raw) : -1, read(out), read(err)};
  }

  // A GPU-shaped run of the tiny preset on 8 workers (kind gpu: linear groups recorded
  // member by member, workers on other SMs), 4 steps, alone in `trace`.
  void make_gpu_trace(const std::string& trace) {
    ASSERT_EQ(mpk::testing::store_gpu_like_tiny(trace, 4, 8), 1);
  }

  // Frames are what take a job's result; here the state is polled as a frame would.
  void finish_jobs(StudioState& s) {
    for (int i = 0; i < 20000; ++i) {
      s.pipeline.runner.wait();
      poll_pipeline(s);
      if (s.pipeline.job == PipelineJob::kNone && !s.pipeline.store_pending) return;
    }
  }
};

TEST_F(OptimizerLoop, ApplyFromAnOpenedMpkAsABinary) {
  if (!have_xvfb()) GTEST_SKIP() << "xvfb-run is not installed (packages xvfb, xauth)";
  const std::string graph = path("graph.mpk");
  ASSERT_EQ(run_tool("mpk-opt", "tiny -o '" + graph + "'").status, 0);
  // The .mpk's module has been through the fusions; Apply starts from its program.
  const CommandResult r =
      studio("--steps 2 --apply 'decompose,infer-deps,assign-sm{policy=round-robin,workers=4}' '" + graph + "'");
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  const std::optional<Comparison> c = parse_comparison(r.out);
  ASSERT_TRUE(c) << r.out;
  EXPECT_EQ(c->a, 1);  // the .mpk as it is, simulated when it was opened
  EXPECT_EQ(c->b, 2);
  EXPECT_NE(r.out.find("simulated under the costs run 1 was simulated with (shipped calibration h100-sxm.json)"),
            std::string::npos) << r.out;
  // New runs went to the side file, which holds the .mpk's run too.
  const TraceReader side(path("graph.studio.db"));
  ASSERT_EQ(side.runs().size(), 2u);
  EXPECT_EQ(side.run(2).policy, "round-robin");
  EXPECT_EQ(side.run(2).num_workers, 4);
  EXPECT_EQ(side.run(2).pipeline, std::string(kDefaultFusions) + ",decompose,infer-deps,"
                                  "assign-sm{policy=round-robin,workers=4}");
  EXPECT_NEAR(c->b_us, static_cast<double>(side.run(2).duration_ns) / 2e3, 0.01);

  // Opened again, the side file takes the next Apply itself: the run's own pipeline.
  const CommandResult again = studio("--apply same '" + path("graph.studio.db") + "'");
  ASSERT_EQ(again.status, 0) << again.out << again.err;
  const std::optional<Comparison> c2 = parse_comparison(again.out);
  ASSERT_TRUE(c2) << again.out;
  EXPECT_EQ(c2->a, 2);
  EXPECT_EQ(c2->b, 3);
  EXPECT_DOUBLE_EQ(c2->a_us, c2->b_us);  // the same schedule
  EXPECT_EQ(TraceReader(path("graph.studio.db")).runs().size(), 3u);
  EXPECT_FALSE(fs::exists(path("graph.studio.studio.db")));
}

TEST_F(OptimizerLoop, ApplyOnADeviceRunComparesSimulationsUnderItsCalibrationAsABinary) {
  if (!have_xvfb()) GTEST_SKIP() << "xvfb-run is not installed (packages xvfb, xauth)";
  const std::string trace = path("gpu.db");
  make_gpu_trace(trace);
  ASSERT_FALSE(HasFatalFailure());
  ::chmod(trace.c_str(), 0444);  // read-only: the studio never writes it
  const std::string before = read(trace);

  // Re-applying the run's own policy: A is run 1's schedule simulated under the costs
  // calibrated from run 1, B the new schedule under the same costs; within 1 %.
  const CommandResult r = studio("--view timeline --apply same '" + trace + "'");
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  const std::optional<Comparison> c = parse_comparison(r.out);
  ASSERT_TRUE(c) << r.out;
  EXPECT_EQ(c->a, 2);
  EXPECT_EQ(c->b, 3);
  EXPECT_LT(std::fabs(c->b_us - c->a_us), 0.01 * c->a_us) << r.out;
  const std::string costs = fs::absolute(path("gpu.studio.run1-costs.json")).string();
  EXPECT_NE(r.out.find("costs calibrated from run 1 (gpu): " + costs), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("compare view"), std::string::npos) << r.out;  // Apply opened it

  EXPECT_TRUE(read(trace) == before) << "the opened trace was written";
  const TraceReader side(path("gpu.studio.db"));
  ASSERT_EQ(side.runs().size(), 3u);
  EXPECT_EQ(side.run(1).kind, "gpu");
  for (int64_t run : {2, 3}) {
    EXPECT_EQ(side.run(run).kind, "sim");
    EXPECT_NE(side.run(run).options.find("costs=" + costs), std::string::npos) << side.run(run).options;
  }
  EXPECT_NE(side.run(2).options.find("simulated to compare with"), std::string::npos);
  EXPECT_EQ(side.stored_module(2)->graph.schedule.workers, side.stored_module(1)->graph.schedule.workers);
  // The calibration is a cost file that mpk run takes, noted with where it came from.
  const CostParams fitted = load_cost_params(costs, CostParams::from_machine(side.stored_module(1)->machine));
  EXPECT_NE(fitted.note.find("calibrated from"), std::string::npos) << fitted.note;
  EXPECT_NE(fitted.note.find(" run 1 (gpu"), std::string::npos) << fitted.note;

  // The same with a cost file the user picks: both sides are simulated under it.
  const CommandResult picked = studio("--costs '" + costs + "' --apply 'assign-sm{policy=round-robin}' '" +
                                      path("gpu.studio.db") + "'");
  ASSERT_EQ(picked.status, 0) << picked.out << picked.err;
  EXPECT_NE(picked.out.find("simulated under cost file " + costs), std::string::npos) << picked.out;
  const std::optional<Comparison> c3 = parse_comparison(picked.out);
  ASSERT_TRUE(c3) << picked.out;
  EXPECT_EQ(c3->a, 3);  // the current run (3) is a simulation under that file already

  // Writing into the read-only input is refused at once, saying why.
  const CommandResult into = studio("--write-into-input --apply same '" + trace + "'");
  EXPECT_EQ(into.status, 1);
  EXPECT_NE(into.err.find("is read-only: new runs cannot be stored in it"), std::string::npos) << into.err;
  EXPECT_TRUE(read(trace) == before) << "the opened trace was written";
}

TEST_F(OptimizerLoop, TheOldRunIsAAndAnImprovementIsBetter) {
  const std::string trace = path("trace.db");
  ASSERT_EQ(run_tool("mpk", "run --backend sim --model tiny --steps 2 --pipeline '" +
                                std::string(testing::kRoundRobin4) + "' --trace '" + trace + "'")
                .status,
            0);
  StudioState s;
  ASSERT_TRUE(open_trace(s, trace)) << s.status;
  set_pipeline_text(s.pipeline, "decompose,infer-deps,assign-sm{policy=round-robin,workers=16}");
  ASSERT_TRUE(apply_pipeline(s)) << s.pipeline.job_message << s.pipeline.text_error;
  finish_jobs(s);
  EXPECT_EQ(s.trace_path, path("trace.studio.db"));
  EXPECT_TRUE(s.trace_is_side);
  EXPECT_EQ(TraceReader(trace).runs().size(), 1u);  // the opened file is not written
  EXPECT_EQ(s.run, 2);             // the new run is current,
  EXPECT_EQ(s.compare_run, 1);     // the old one (a simulation under the same costs) A
  EXPECT_TRUE(s.compare_current_is_b);
  const RunRecord& a = *find_run(s, 1);
  const RunRecord& b = *find_run(s, 2);
  ASSERT_LT(b.duration_ns, a.duration_ns) << "16 workers should beat 4 here";
  const CompareModel cm(*s.reader, 1, *s.reader, 2, CompareSide::kA);
  const DeltaRow& makespan = cm.deltas()[1];
  ASSERT_EQ(makespan.label, "makespan per step (mean)");
  EXPECT_LT(makespan.delta(), 0);
  EXPECT_EQ(makespan.better(), 1);  // green
  EXPECT_EQ(cm.model().run().id, 1);  // the model loaded is A's (B's is the current one)
}

TEST_F(OptimizerLoop, HandEditsOfADeviceRunAreComparedWithItsScheduleSimulatedUnderItsCalibration) {
  const std::string trace = path("gpu.db");
  make_gpu_trace(trace);
  ASSERT_FALSE(HasFatalFailure());
  StudioState s;
  ASSERT_TRUE(open_trace(s, trace)) << s.status;
  ASSERT_TRUE(begin_edit_session(s)) << s.pipeline.job_message;
  finish_jobs(s);
  ASSERT_TRUE(has_edit_session(s)) << s.pipeline.job_message;
  EXPECT_NE(s.pipeline.session_costs.label.find("costs calibrated from run 1 (gpu)"), std::string::npos);
  EXPECT_EQ(s.pipeline.session_base, -1);  // stored with the first edit
  EXPECT_FALSE(fs::exists(path("gpu.studio.db")));  // nothing stored yet

  const ScheduleEditor& e = *s.pipeline.editor;
  const TaskId t = e.module().graph.schedule.workers[0].back();
  const EditOutcome moved = edit_move_to_worker(s, t, 1);
  ASSERT_TRUE(moved.accepted) << moved.message;
  finish_jobs(s);
  // Stored: run 2, run 1's schedule under the calibration (A), and run 3, the edit (B).
  ASSERT_EQ(s.runs.size(), 3u) << s.pipeline.job_message;
  EXPECT_EQ(s.pipeline.session_base, 2);
  EXPECT_EQ(s.run, 3);
  EXPECT_EQ(s.compare_run, 2);
  EXPECT_TRUE(s.compare_current_is_b);
  EXPECT_EQ(find_run(s, 2)->duration_ns, e.original_duration_ns());
  EXPECT_EQ(find_run(s, 3)->duration_ns, e.duration_ns());
  const std::optional<Comparison> c = parse_comparison(s.pipeline.job_message);
  ASSERT_TRUE(c) << s.pipeline.job_message;
  EXPECT_EQ(c->a, 2);
  EXPECT_EQ(c->b, 3);
  // Undone: the unedited schedule is run 2, shown as it is; redone: run 3 again.
  ASSERT_TRUE(edit_undo(s));
  finish_jobs(s);
  EXPECT_EQ(s.run, 2);
  ASSERT_TRUE(edit_redo(s));
  finish_jobs(s);
  EXPECT_EQ(s.run, 3);
  EXPECT_EQ(s.runs.size(), 3u);
}

TEST_F(OptimizerLoop, AHandMoveThatCannotBeStoredSaysSo) {
  const std::string trace = path("trace.db");
  ASSERT_EQ(run_tool("mpk", "run --backend sim --model tiny --steps 2 --pipeline '" +
                                std::string(testing::kRoundRobin4) + "' --trace '" + trace + "'")
                .status,
            0);
  ::chmod(trace.c_str(), 0444);
  StudioState s;
  ASSERT_TRUE(open_trace(s, trace)) << s.status;
  s.write_into_input = true;  // the user chose the opened file, which is read-only
  ASSERT_TRUE(begin_edit_session(s));
  finish_jobs(s);
  ASSERT_TRUE(has_edit_session(s)) << s.pipeline.job_message;
  const TaskId t = s.pipeline.editor->module().graph.schedule.workers[0].back();
  ASSERT_TRUE(edit_move_to_worker(s, t, 1).accepted);
  finish_jobs(s);
  EXPECT_TRUE(s.status_error);
  EXPECT_NE(s.status.find("could not be stored as a run"), std::string::npos) << s.status;
  EXPECT_NE(s.status.find("is read-only"), std::string::npos) << s.status;
  EXPECT_EQ(s.pipeline.editor->applied(), 1u);  // the edit is kept in the session
  EXPECT_EQ(s.runs.size(), 1u);

  // Apply says so before it starts; with a side file (the default) both work.
  set_pipeline_text(s.pipeline, testing::kRoundRobin4);
  EXPECT_FALSE(apply_pipeline(s));
  EXPECT_NE(s.pipeline.job_message.find("is read-only"), std::string::npos) << s.pipeline.job_message;
  s.write_into_input = false;
  ASSERT_TRUE(apply_pipeline(s)) << s.pipeline.job_message;
  finish_jobs(s);
  EXPECT_FALSE(s.pipeline.job_failed) << s.pipeline.job_message;
  EXPECT_EQ(s.trace_path, path("trace.studio.db"));
  EXPECT_EQ(s.runs.size(), 2u);
}

TEST_F(OptimizerLoop, ASideFileOfAnotherTraceIsNotWrittenOver) {
  const std::string trace = path("trace.db");
  ASSERT_EQ(run_tool("mpk", "run --backend sim --model tiny --steps 2 --trace '" + trace + "'").status, 0);
  // trace.studio.db exists, but holds another run under id 1.
  ASSERT_EQ(run_tool("mpk", "run --backend sim --model tiny --steps 3 --trace '" + path("trace.studio.db") + "'")
                .status,
            0);
  const std::string other = read(path("trace.studio.db"));
  StudioState s;
  ASSERT_TRUE(open_trace(s, trace)) << s.status;
  EXPECT_EQ(prepare_store(s), path("trace.studio-2.db"));
  EXPECT_TRUE(read(path("trace.studio.db")) == other) << "another trace's side file was written";
  EXPECT_EQ(s.runs.size(), 1u);
  // Opened again later, the original finds the side file that continues it.
  StudioState later;
  ASSERT_TRUE(open_trace(later, trace));
  EXPECT_EQ(prepare_store(later), path("trace.studio-2.db"));
}

}  // namespace
}  // namespace mpk::studio
