// The why-idle walk and the hover texts: the hand-timed fork-join chain, a task queued
// behind its worker's previous task, the walk on the tiny preset against the rule it
// follows, and what a bubble's tooltip says.
#include "studio/model/why_idle.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <set>

#include "tests/studio/studio_test_runs.h"
#include "traces/analysis.h"

namespace mpk::studio {
namespace {

using mpk::testing::kNorm;
using mpk::testing::kQ0;
using mpk::testing::kQ1;
using mpk::testing::kResidual;
using mpk::testing::TempPath;

TEST(WhyIdle, ForkJoinChainBackToTheStepStart) {
  TempPath path("studio_why_fork_join.db");
  const int64_t run = mpk::testing::store_fork_join(path.str(), 3);
  const TraceReader reader(path.str());
  const TraceModel m(reader, run);
  // residual@1 waited for q1@1 (ended last), which waited for norm@1, which began the
  // step (its producer is step 0's residual).
  const WhyIdle w = why_idle(m, m.find(kResidual, 1));
  ASSERT_EQ(w.chain.size(), 3u);
  EXPECT_EQ(w.chain[0].exec, m.find(kNorm, 1));
  EXPECT_EQ(w.chain[0].via, WhyIdleLink::kStepStart);
  EXPECT_EQ(w.chain[1].exec, m.find(kQ1, 1));
  EXPECT_EQ(w.chain[1].via, WhyIdleLink::kEvent);
  EXPECT_EQ(w.chain[1].event, 0);
  EXPECT_EQ(w.chain[2].exec, m.find(kResidual, 1));
  EXPECT_EQ(w.chain[2].event, 1);
  EXPECT_EQ(w.busy_ns, 100 + 500 + 100);
  EXPECT_EQ(w.gap_ns, 0);
  EXPECT_NE(describe(m, w.chain[1]).find("waited 0 ns for event 0"), std::string::npos);
}

TEST(WhyIdle, QueuedBehindTheWorkersPreviousTask) {
  // Worker 0 runs a (1000 ns) then c (100 ns); b (200 ns) on worker 1 feeds c. c could
  // start at 200 but waits for a: the walk goes to a through the worker.
  mpk::testing::GraphBuilder g(2);
  const OpId op = g.op("L0.mlp", OpKind::kSiluMul, 0);
  const TaskId a = g.task(op, 1000), b = g.task(op, 200), c = g.task(op, 100);
  g.event({b}, {c});
  const Module mod = g.schedule({{a, c}, {b}});
  TempPath path("studio_why_queued.db");
  const int64_t run = mpk::testing::store_run(path.str(), mod, mpk::testing::unit_costs(), 1, "q");
  const TraceReader reader(path.str());
  const TraceModel m(reader, run);
  const WhyIdle w = why_idle(m, m.find(c, 0));
  ASSERT_EQ(w.chain.size(), 2u);
  EXPECT_EQ(w.chain[0].exec, m.find(a, 0));
  EXPECT_EQ(w.chain[1].via, WhyIdleLink::kWorker);
  EXPECT_NE(describe(m, w.chain[1]).find("queued"), std::string::npos);
  // b's execution had nothing before it in the step.
  const WhyIdle wb = why_idle(m, m.find(b, 0));
  ASSERT_EQ(wb.chain.size(), 1u);
  EXPECT_EQ(wb.chain[0].via, WhyIdleLink::kStepStart);
}

TEST(WhyIdle, TinyPresetWalkFollowsTheRule) {
  TempPath path("studio_why_tiny.db");
  const int64_t run = mpk::testing::store_tiny(path.str(), 3);
  const TraceReader reader(path.str());
  const TraceModel m(reader, run);
  // From the last task of step 1.
  int64_t last = -1;
  for (size_t i = 0; i < m.executions().size(); ++i)
    if (m.executions()[i].step == 1 && (last < 0 || m.executions()[i].end_ns > m.execution(last).end_ns))
      last = static_cast<int64_t>(i);
  const WhyIdle w = why_idle(m, last);
  ASSERT_GE(w.chain.size(), 5u);
  EXPECT_EQ(w.chain.back().exec, last);
  EXPECT_EQ(w.chain.front().via, WhyIdleLink::kStepStart);
  int64_t busy = 0;
  for (size_t i = 0; i < w.chain.size(); ++i) {
    const Execution& e = m.execution(w.chain[i].exec);
    EXPECT_EQ(e.step, 1);
    busy += e.end_ns - e.start_ns;
    if (i == 0) continue;
    const Execution& prev = m.execution(w.chain[i - 1].exec);
    EXPECT_LE(prev.end_ns, e.start_ns);
    if (w.chain[i].via == WhyIdleLink::kWorker) {
      EXPECT_EQ(prev.worker, e.worker);
      EXPECT_EQ(m.previous_on_worker(w.chain[i].exec), w.chain[i - 1].exec);
    } else {
      ASSERT_EQ(w.chain[i].via, WhyIdleLink::kEvent);
      const Blame b = m.blame(w.chain[i].exec);
      EXPECT_EQ(b.producer_exec, w.chain[i - 1].exec);
      EXPECT_EQ(b.event, w.chain[i].event);
    }
  }
  EXPECT_EQ(w.busy_ns, busy);
  // The chain spans the step: from its start (or the first link's, when that began
  // early) its busy time and gaps add up to the task's end.
  const Execution& tail = m.execution(last);
  const int64_t from = std::min(m.steps()[1].start_ns, m.execution(w.chain.front().exec).start_ns);
  EXPECT_EQ(w.busy_ns + w.gap_ns, tail.end_ns - from);
}

// On a GPU-shaped run (linear groups recorded member by member) and on the hand-made
// grouped run: from every step's last task, the walk's running and waiting add up to at
// most the step's makespan, and the trace analyses' critical path of every step too.
TEST(WhyIdle, TheCriticalPathOfEveryStepFitsInItsMakespan) {
  TempPath path("studio_why_gpu_like.db");
  const int64_t gpu_like = mpk::testing::store_gpu_like_tiny(path.str(), 6, 16);
  const int64_t grouped = write_run(path.str(), mpk::testing::grouped_graph(), RunInfo{}, mpk::testing::grouped_execs());
  const TraceReader reader(path.str());
  int groups_on_paths = 0;
  for (const int64_t run : {gpu_like, grouped}) {
    const TraceModel m(reader, run);
    for (const StepRecord& st : m.steps()) {
      // The step's last-ending execution.
      int64_t last = -1;
      for (size_t i = 0; i < m.executions().size(); ++i)
        if (m.execution(static_cast<int64_t>(i)).step == st.step &&
            (last < 0 || m.execution(static_cast<int64_t>(i)).end_ns > m.execution(last).end_ns))
          last = static_cast<int64_t>(i);
      ASSERT_GE(last, 0);
      const WhyIdle w = why_idle(m, last);
      EXPECT_LE(w.busy_ns + w.gap_ns, st.end_ns - st.start_ns) << "run " << run << " step " << st.step;
      for (const WhyIdleLink& l : w.chain) groups_on_paths += m.group_of(l.exec).size() > 1;
      const RunStats stats = compute_stats(reader, run, st.step);
      EXPECT_LE(stats.path_busy_ns + stats.path_gap_ns, st.end_ns - st.start_ns) << "run " << run << " step " << st.step;
    }
  }
  EXPECT_GT(groups_on_paths, 0);  // the walks went through groups
}

TEST(WhyIdle, ABlameCycleInAnEditedTraceEndsTheChain) {
  TempPath path("studio_why_cycle.db");
  const int64_t run = mpk::testing::store_fork_join(path.str(), 3);
  // The norm now also waits on event 0, which it triggers itself: its blame is itself.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.str().c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "INSERT INTO event_consumer(graph, event, task) VALUES(1, 0, 0)", nullptr,
                         nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  const TraceReader reader(path.str());
  const TraceModel m(reader, run);
  ASSERT_EQ(m.blame(m.find(kNorm, 1)).producer_exec, m.find(kNorm, 1));
  const WhyIdle w = why_idle(m, m.find(kResidual, 1));
  std::set<int64_t> seen;
  for (const WhyIdleLink& l : w.chain) EXPECT_TRUE(seen.insert(l.exec).second) << "exec " << l.exec << " twice";
  ASSERT_EQ(w.chain.size(), 3u);
  EXPECT_EQ(w.chain[0].exec, m.find(kNorm, 1));
  EXPECT_EQ(w.chain[0].via, WhyIdleLink::kStepStart);
}

TEST(WhyIdle, AWaitPastItsProducersEndSaysHowLong) {
  TempPath path("studio_why_release.db");
  const int64_t run = write_run(path.str(), mpk::testing::grouped_graph(), RunInfo{}, mpk::testing::grouped_execs());
  const TraceReader reader(path.str());
  const TraceModel m(reader, run);
  const Bubble* b = m.bubble_at(1, 50);  // q+k on worker 1 waits for the norm, which ends at 100
  ASSERT_NE(b, nullptr);
  const std::string text = explain_bubble(m, *b);
  EXPECT_NE(text.find("which finished at 100 ns; the wait went on 10 ns after it"), std::string::npos) << text;
}

TEST(WhyIdle, TextsNameWhatTheWorkerWaitedFor) {
  TempPath path("studio_why_texts.db");
  const int64_t run = mpk::testing::store_fork_join(path.str(), 2);
  const TraceReader reader(path.str());
  const TraceModel m(reader, run);
  const std::string wait = explain_bubble(m, *m.bubble_at(1, 50));
  EXPECT_NE(wait.find("idle 100 ns: wait (step 0, w1 SM 1"), std::string::npos) << wait;
  EXPECT_NE(wait.find("waited for event 0, released last by L0.input_norm [task 0] on w0 SM 0"),
            std::string::npos)
      << wait;
  EXPECT_NE(wait.find("which finished at 100 ns"), std::string::npos) << wait;
  EXPECT_NE(wait.find("before L0.q_proj [task 2]"), std::string::npos) << wait;
  EXPECT_NE(explain_bubble(m, *m.bubble_at(0, 400)).find("queue_empty"), std::string::npos);
  EXPECT_NE(explain_bubble(m, *m.bubble_at(0, 650)).find("draining"), std::string::npos);

  const std::string task = explain_execution(m, m.find(kQ0, 1));
  EXPECT_NE(task.find("L0.q_proj  [task 1]"), std::string::npos) << task;
  EXPECT_NE(task.find("operator kind linear, task kind linear, layer 0"), std::string::npos) << task;
  EXPECT_NE(task.find("step 1, w0 SM 0"), std::string::npos) << task;
  EXPECT_NE(task.find("start 800 ns"), std::string::npos) << task;
  EXPECT_NE(task.find("duration 200 ns"), std::string::npos) << task;
}

// Above batch 1 a task's tooltip names the batch rows it serves, from the regions of the
// module stored with the run: an attention task a block of rows, a linear all of them.
TEST(WhyIdle, ATasksTextNamesItsBatchRows) {
  ImportOptions o;
  o.batch = 4;
  Module mod = import_model("tiny", o);
  PassManager(parse_pipeline("decompose{attention-rows=2},infer-deps,assign-sm")).run(mod);
  TempPath path("studio_why_batch_rows.db");
  const int64_t run = mpk::testing::store_run(path.str(), mod, CostParams::from_machine(mod.machine), 1, "tiny");
  const TraceReader reader(path.str());
  const TraceModel m(reader, run);
  std::set<std::string> attention, linear;
  for (int64_t i = 0; i < static_cast<int64_t>(m.executions().size()); ++i) {
    const std::string text = explain_execution(m, i);
    const size_t at = text.find("batch rows ");
    ASSERT_NE(at, std::string::npos) << text;
    const std::string rows = text.substr(at, text.find('\n', at) - at);
    const TaskKind k = m.task(m.execution(i).task).kind;
    if (k == TaskKind::kAttention) attention.insert(rows);
    if (k == TaskKind::kLinear) linear.insert(rows);
  }
  EXPECT_EQ(attention, (std::set<std::string>{"batch rows 0..1 of 4", "batch rows 2..3 of 4"}));
  EXPECT_EQ(linear, std::set<std::string>{"batch rows 0..3 of 4"});

  TempPath one("studio_why_batch_one.db");  // at batch 1 there is nothing to say
  const int64_t run1 = mpk::testing::store_tiny(one.str(), 1);
  const TraceReader reader1(one.str());
  const TraceModel m1(reader1, run1);
  EXPECT_EQ(explain_execution(m1, 0).find("batch rows"), std::string::npos);
}

}  // namespace
}  // namespace mpk::studio
