// Tests of assign-sm and its policies: every policy on every preset gives a valid,
// deadlock-free schedule with every task exactly once; round-robin is the task id
// order; critical-path runs the longest path first and is never worse than round-robin
// in the cost model; locality keeps a consumer with its main producer within its slack;
// options are checked per policy; the recorded parameters replay the same schedule.
#include <gtest/gtest.h>

#include "hand_module.h"
#include "ir/import/import.h"
#include "ir/verifier.h"
#include "passes/policies/policy.h"
#include "passes/summary.h"

namespace mpk {
namespace {

using testing::HandModule;
using testing::run_pass;

Module with_deps(const std::string& preset) {
  Module m = import_model(preset, ImportOptions{});
  run_pass(m, "decompose");
  run_pass(m, "infer-deps");
  return m;
}

int32_t worker_of(const Module& m, TaskId t) {
  const auto& w = m.graph.schedule.workers;
  for (size_t i = 0; i < w.size(); ++i)
    if (std::find(w[i].begin(), w[i].end(), t) != w[i].end()) return static_cast<int32_t>(i);
  return -1;
}

// A hand module (hand_module.h) is checked by the graph and schedule layers only.
void expect_valid_schedule(const Module& m, const std::string& what, bool hand = false) {
  std::vector<Diagnostic> d = hand ? verify_graph(m) : verify_module(m);
  if (hand && d.empty()) d = verify_schedule(m);
  EXPECT_TRUE(d.empty()) << what << ": " << d.front().rule << ": " << d.front().message;
  std::vector<int> seen(m.graph.tasks.size(), 0);
  for (const auto& list : m.graph.schedule.workers)
    for (TaskId t : list) ++seen[t];
  for (size_t t = 0; t < seen.size(); ++t) ASSERT_EQ(seen[t], 1) << what << ": task " << t;
}

void check_every_policy(const std::string& preset) {
  const Module base = with_deps(preset);
  for (const PolicyInfo& p : all_policies()) {
    Module m = base;
    EXPECT_TRUE(run_pass(m, "assign-sm", {{"policy", p.name}}));
    EXPECT_EQ(m.graph.schedule.policy, p.name);
    EXPECT_EQ(m.graph.schedule.workers.size(), static_cast<size_t>(m.machine.sm_count));
    EXPECT_EQ(attr_int(m.graph.schedule.params, "workers"), m.machine.sm_count);
    expect_valid_schedule(m, preset + " " + p.name);
  }
}

TEST(AssignSm, EveryPolicyOnSmallPresetsIsValid) {
  for (const char* preset : {"tiny", "tiny-qwen3", "llama-3.2-1b"}) check_every_policy(preset);
}

TEST(AssignSmSlow, EveryPolicyOnQwen3_8bIsValid) { check_every_policy("qwen3-8b"); }

TEST(AssignSm, CriticalPathNotWorseThanRoundRobinOnLlama) {
  const Module base = with_deps("llama-3.2-1b");
  Module rr = base, cp = base;
  run_pass(rr, "assign-sm", {{"policy", "round-robin"}});
  run_pass(cp, "assign-sm", {{"policy", "critical-path"}});
  const ModuleSummary srr = summarize(rr), scp = summarize(cp);
  EXPECT_GT(srr.makespan_ns, 0);
  EXPECT_LE(scp.makespan_ns, srr.makespan_ns);
  EXPECT_GE(scp.makespan_ns, scp.critical_path_ns * 0.5);
}

TEST(AssignSm, CriticalPathNotWorseThanRoundRobinOnTinyPresets) {
  for (const char* preset : {"tiny", "tiny-qwen3"}) {
    const Module base = with_deps(preset);
    Module rr = base, cp = base;
    run_pass(rr, "assign-sm", {{"policy", "round-robin"}, {"workers", "8"}});
    run_pass(cp, "assign-sm", {{"policy", "critical-path"}, {"workers", "8"}});
    EXPECT_LE(summarize(cp).makespan_ns, summarize(rr).makespan_ns) << preset;
  }
}

TEST(AssignSm, RoundRobinIsTaskIdOrder) {
  Module m = with_deps("tiny");
  run_pass(m, "assign-sm", {{"policy", "round-robin"}, {"workers", "5"}});
  ASSERT_EQ(m.graph.schedule.workers.size(), 5u);
  for (size_t w = 0; w < 5; ++w) {
    const auto& list = m.graph.schedule.workers[w];
    for (size_t i = 0; i < list.size(); ++i) EXPECT_EQ(list[i], static_cast<TaskId>(w + 5 * i));
  }
}

// Two independent chains, one long (0 -> 1, big), one short (2 -> 3), and a filler 4,
// on one worker: critical-path starts the long chain first.
TEST(AssignSm, CriticalPathRunsTheLongestPathFirst) {
  HandModule h;
  const TensorId a = h.tensor("a"), b = h.tensor("b");
  h.task({}, {h.cols(b, 0, 64)}, 1000);       // 0: short chain
  h.task({h.cols(b, 0, 64)}, {}, 1000);       // 1
  h.task({}, {h.cols(a, 0, 64)}, 1000);       // 2: long chain
  h.task({h.cols(a, 0, 64)}, {}, 50000000);   // 3
  run_pass(h.m, "infer-deps");
  run_pass(h.m, "assign-sm", {{"policy", "critical-path"}, {"workers", "1"}});
  EXPECT_EQ(h.m.graph.schedule.workers[0], (std::vector<TaskId>{2, 3, 0, 1}));
  run_pass(h.m, "assign-sm", {{"policy", "round-robin"}, {"workers", "1"}});
  EXPECT_EQ(h.m.graph.schedule.workers[0], (std::vector<TaskId>{0, 1, 2, 3}));
  expect_valid_schedule(h.m, "hand", true);
}

// Task 2 reads all of task 0's output and a sliver of task 1's, which finishes later;
// task 3 is a long independent task that gives task 2 slack. critical-path puts task 2
// with task 1 (its earliest finish); locality keeps it with task 0, its main producer.
HandModule locality_case() {
  HandModule h;
  const TensorId a = h.tensor("a"), b = h.tensor("b"), c = h.tensor("c");
  h.task({}, {h.cols(a, 0, 64)}, 1000);                          // 0: main producer
  h.task({}, {h.cols(b, 0, 64)}, 100000);                        // 1: finishes later
  h.task({h.cols(a, 0, 64), h.cols(b, 0, 8)}, {h.cols(c, 0, 64)}, 1000);  // 2
  h.task({}, {}, 500000000);                                     // 3: long, independent
  run_pass(h.m, "infer-deps");
  return h;
}

TEST(AssignSm, LocalityKeepsConsumerWithMainProducer) {
  HandModule cp = locality_case(), loc = locality_case();
  run_pass(cp.m, "assign-sm", {{"policy", "critical-path"}, {"workers", "3"}});
  run_pass(loc.m, "assign-sm", {{"policy", "locality"}, {"workers", "3"}});
  EXPECT_EQ(worker_of(cp.m, 2), worker_of(cp.m, 1));
  EXPECT_NE(worker_of(cp.m, 2), worker_of(cp.m, 0));
  EXPECT_EQ(worker_of(loc.m, 2), worker_of(loc.m, 0));
  // Without slack to spend it behaves as critical-path.
  HandModule tight = locality_case();
  run_pass(tight.m, "assign-sm",
           {{"policy", "locality"}, {"workers", "3"}, {"slack-scale", "0"}});
  EXPECT_EQ(worker_of(tight.m, 2), worker_of(tight.m, 1));
  EXPECT_EQ(summarize(loc.m).makespan_ns, summarize(cp.m).makespan_ns);
  expect_valid_schedule(loc.m, "locality", true);
}

TEST(AssignSm, RecordsParametersThatReplayTheSchedule) {
  const Module base = with_deps("tiny-qwen3");
  Module m = base;
  run_pass(m, "assign-sm", {{"policy", "locality"}, {"workers", "16"}, {"slack-scale", "0.5"}});
  const Schedule& s = m.graph.schedule;
  EXPECT_EQ(s.policy, "locality");
  EXPECT_EQ(attr_int(s.params, "workers"), 16);
  EXPECT_EQ(attr_float(s.params, "slack_scale"), 0.5);
  EXPECT_EQ(attr_float(s.params, "event_latency_ns"), m.machine.event_latency_ns);
  Module again = base;
  run_pass(again, "assign-sm",
           {{"policy", s.policy},
            {"workers", std::to_string(attr_int(s.params, "workers"))},
            {"slack-scale", format_attr_value(s.params.at("slack_scale"))},
            {"event-latency-ns", format_attr_value(s.params.at("event_latency_ns"))}});
  EXPECT_EQ(again.graph.schedule.workers, s.workers);
  EXPECT_FALSE(run_pass(again, "assign-sm",
                        {{"policy", "locality"}, {"workers", "16"}, {"slack-scale", "0.5"}}));
}

TEST(AssignSm, EventLatencyOptionChangesTheModel) {
  Module m = with_deps("tiny");
  run_pass(m, "assign-sm", {{"policy", "critical-path"}, {"event-latency-ns", "0"}});
  EXPECT_EQ(attr_float(m.graph.schedule.params, "event_latency_ns"), 0.0);
  expect_valid_schedule(m, "latency 0");
}

std::string create_error(const PassOptions& o) {
  try {
    find_pass("assign-sm")->create(o);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(AssignSm, RejectsBadOptions) {
  const std::string unknown = create_error({{"policy", "fastest"}});
  EXPECT_NE(unknown.find("option 'policy' expects one of"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("got 'fastest'"), std::string::npos) << unknown;
  for (const PolicyInfo& p : all_policies())
    EXPECT_NE(unknown.find(p.name), std::string::npos) << unknown;
  const std::string foreign = create_error({{"policy", "round-robin"}, {"slack-scale", "1"}});
  EXPECT_NE(foreign.find("'slack-scale' does not apply to policy 'round-robin'"),
            std::string::npos)
      << foreign;
  EXPECT_NE(create_error({{"workers", "0"}}).find("workers"), std::string::npos);
  EXPECT_NE(create_error({{"workers", "x"}}).find("integer"), std::string::npos);
  EXPECT_NE(create_error({{"policy", "locality"}, {"slack-scale", "-1"}}).find("slack-scale"),
            std::string::npos);
  EXPECT_NE(create_error({{"event-latency-ns", "-5"}}).find("event-latency-ns"), std::string::npos);
  // Every policy option is a known option of the pass.
  for (const PolicyInfo& p : all_policies())
    for (const PassOptionInfo& o : p.options) {
      const auto& known = find_pass("assign-sm")->options;
      EXPECT_TRUE(std::any_of(known.begin(), known.end(),
                              [&](const PassOptionInfo& k) { return k.name == o.name; }))
          << o.name;
    }
}

TEST(AssignSm, MoreWorkersThanSmsFails) {
  Module m = with_deps("tiny");
  EXPECT_THROW(run_pass(m, "assign-sm", {{"workers", "133"}}), Error);
  EXPECT_TRUE(m.graph.schedule.empty());
}

TEST(AssignSm, RejectsAScheduleThatCanDeadlock) {
  // Task 0 waits on task 1: the task id order is not a dependency order, so
  // round-robin on one worker would block forever.
  HandModule h;
  h.task({}, {});
  h.task({}, {});
  h.m.graph.events.push_back({{1}, {0}, 1, 0});
  try {
    run_pass(h.m, "assign-sm", {{"policy", "round-robin"}, {"workers", "1"}});
    FAIL() << "expected a deadlock error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("deadlock"), std::string::npos) << e.what();
  }
  // List scheduling follows the dependencies and succeeds.
  run_pass(h.m, "assign-sm", {{"policy", "critical-path"}, {"workers", "1"}});
  EXPECT_EQ(h.m.graph.schedule.workers[0], (std::vector<TaskId>{1, 0}));
}

TEST(AssignSm, RejectsCyclicEventsAndMissingTasks) {
  HandModule h;
  EXPECT_THROW(run_pass(h.m, "assign-sm"), Error);  // no tasks
  h.task({}, {});
  h.task({}, {});
  h.m.graph.events.push_back({{1}, {0}, 1, 0});
  h.m.graph.events.push_back({{0}, {1}, 1, 0});
  EXPECT_THROW(run_pass(h.m, "assign-sm"), Error);
  h.m.graph.events = {{{7}, {0}, 1, 0}};
  EXPECT_THROW(run_pass(h.m, "assign-sm"), Error);
}

}  // namespace
}  // namespace mpk
