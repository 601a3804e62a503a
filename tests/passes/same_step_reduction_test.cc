// Tests of infer-deps' same-step reduction (prune-same-step) on the default pipeline. With
// the fusions, o_proj task i also reads the residual tile that down_proj task i of the
// layer before wrote, and down_proj task i the one o_proj task i wrote; both edges are
// implied through the layer's other stages, so each layer's o_proj tasks share one event
// (on the attention tasks) and its down_proj tasks another (on the silu_mul tasks). The
// reduced graph keeps the reachability of the unreduced one and has no implied edge left.
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <map>

#include "hand_module.h"
#include "ir/import/import.h"
#include "ir/task_graph_index.h"
#include "passes/pass_manager.h"

namespace mpk {
namespace {

using testing::events_of;
using testing::same_step_reach;

// The preset after the default pipeline, with infer-deps' prune-same-step as given.
Module compiled(const std::string& preset, bool prune_same_step) {
  Pipeline pipeline = parse_pipeline(kDefaultPipeline);
  for (PipelineEntry& e : pipeline)
    if (e.pass == "infer-deps") e.options["prune-same-step"] = prune_same_step ? "true" : "false";
  Module m = import_model(preset, ImportOptions{});
  PassManager(pipeline).run(m);
  return m;
}

std::vector<TaskId> tasks_of(const Module& m, const std::string& op, TaskKind kind) {
  std::vector<TaskId> out;
  for (size_t t = 0; t < m.graph.tasks.size(); ++t) {
    const Task& task = m.graph.tasks[t];
    if (m.program.ops[task.op].name == op && task.kind == kind) out.push_back(static_cast<TaskId>(t));
  }
  return out;
}

// The same-step events task t waits on (waits) or triggers.
std::vector<EventId> same_step(const Module& m, TaskId t, bool waits) {
  const TaskGraphIndex g(m.graph);
  const std::span<const EventId> events = waits ? g.same_step_waits(t) : g.same_step_triggers(t);
  return {events.begin(), events.end()};
}

// Every consumer waits on one same-step event, the same for all, whose producers are
// exactly `producers`; and every producer triggers it and at most one other same-step
// event (an attention task serving some of a kv head's query heads also signals the
// kv_append task that follows it).
void expect_one_event(const Module& m, const std::vector<TaskId>& producers,
                      const std::vector<TaskId>& consumers, const std::string& what) {
  ASSERT_FALSE(producers.empty()) << what;
  ASSERT_FALSE(consumers.empty()) << what;
  const std::vector<EventId> first = same_step(m, consumers[0], true);
  ASSERT_EQ(first.size(), 1u) << what << ": task " << consumers[0];
  EXPECT_EQ(m.graph.events[first[0]].producers, producers) << what;
  for (TaskId c : consumers)
    EXPECT_EQ(same_step(m, c, true), first) << what << ": task " << c;
  for (TaskId p : producers) {
    const std::vector<EventId> fired = same_step(m, p, false);
    EXPECT_NE(std::find(fired.begin(), fired.end(), first[0]), fired.end()) << what << ": task " << p;
    EXPECT_LE(fired.size(), m.graph.tasks[p].kind == TaskKind::kAttention ? 2u : 1u) << what << ": task " << p;
  }
}

// How many distinct same-step events the tasks wait on.
int64_t distinct_waits(const Module& m, const std::vector<TaskId>& tasks) {
  std::vector<EventId> events;
  for (TaskId t : tasks) {
    const std::vector<EventId> waits = same_step(m, t, true);
    events.insert(events.end(), waits.begin(), waits.end());
  }
  std::sort(events.begin(), events.end());
  return std::unique(events.begin(), events.end()) - events.begin();
}

int32_t num_layers(const Module& m) {
  int32_t layers = 0;
  for (const Operator& op : m.program.ops) layers = std::max(layers, op.layer + 1);
  return layers;
}

// Same-step events per layer of their first consumer (-1: outside the layers).
std::map<int32_t, int64_t> events_per_layer(const Module& m) {
  std::map<int32_t, int64_t> count;
  for (const Event& e : m.graph.events)
    if (e.step_distance == 0) ++count[m.program.ops[m.graph.tasks[e.consumers[0]].op].layer];
  return count;
}

TEST(SameStepReduction, OneEventIntoOprojAndDownprojPerLayer) {
  for (const std::string preset : {"tiny", "llama-3.2-1b"}) {
    const Module m = compiled(preset, true);
    const Module full = compiled(preset, false);
    const std::map<int32_t, int64_t> after = events_per_layer(m), before = events_per_layer(full);
    for (int32_t l = 0; l < num_layers(m); ++l) {
      const std::string L = "L" + std::to_string(l) + ".";
      std::vector<TaskId> attention = tasks_of(m, L + "attention", TaskKind::kAttentionMerge);
      if (attention.empty()) attention = tasks_of(m, L + "attention", TaskKind::kAttention);
      const std::vector<TaskId> o_proj = tasks_of(m, L + "o_proj", TaskKind::kLinear);
      // down_proj's input comes from the SwiGLU linear (fuse-swiglu) or from silu_mul.
      std::vector<TaskId> act = tasks_of(m, L + "gate_proj_swiglu", TaskKind::kLinear);
      if (act.empty()) act = tasks_of(m, L + "silu_mul", TaskKind::kSiluMul);
      const std::vector<TaskId> down = tasks_of(m, L + "down_proj", TaskKind::kLinear);
      expect_one_event(m, attention, o_proj, preset + " " + L + "o_proj");
      expect_one_event(m, act, down, preset + " " + L + "down_proj");
      // Unreduced, o_proj and down_proj tasks wait on one set per residual tile (after
      // layer 0, one per task); reduced, on one set per operator.
      const int64_t saved = distinct_waits(full, o_proj) + distinct_waits(full, down) - 2;
      if (l > 0) {
        EXPECT_EQ(saved, static_cast<int64_t>(o_proj.size() + down.size()) - 2);
      }
      EXPECT_LE(after.at(l), before.at(l) - saved) << preset << " layer " << l;
      if (l == 1)
        std::cout << preset << ": same-step events in layer 1 " << before.at(l) << " -> "
                  << after.at(l) << ", in all " << events_of(full, 0).size() << " -> "
                  << events_of(m, 0).size() << "\n";
    }
  }
}

TEST(SameStepReduction, KeepsReachabilityAndLeavesNoImpliedEdge) {
  for (const std::string preset : {"tiny", "tiny-qwen3"}) {
    const Module m = compiled(preset, true);
    const Module full = compiled(preset, false);
    ASSERT_EQ(m.graph.tasks.size(), full.graph.tasks.size());
    const auto reach = same_step_reach(m);
    EXPECT_TRUE(reach == same_step_reach(full)) << preset << ": transitive closures differ";
    EXPECT_LT(events_of(m, 0).size(), events_of(full, 0).size()) << preset;
    EXPECT_EQ(events_of(m, 1), events_of(full, 1)) << preset << ": cross-step events changed";
    // No producer of a consumer reaches another of its producers.
    for (size_t c = 0; c < m.graph.tasks.size(); ++c) {
      std::vector<TaskId> producers;
      for (EventId e : same_step(m, static_cast<TaskId>(c), true))
        producers.insert(producers.end(), m.graph.events[e].producers.begin(),
                         m.graph.events[e].producers.end());
      for (TaskId p : producers)
        for (TaskId q : producers)
          EXPECT_FALSE(p != q && reach[p][q]) << preset << ": " << p << " -> " << q << " -> " << c;
    }
  }
}

}  // namespace
}  // namespace mpk
