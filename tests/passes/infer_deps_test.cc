// Tests of infer-deps: RAW, WAR and WAW on hand-built graphs, exact last-writer
// semantics (full cover erases, partial cover stays), one event per producer set,
// cross-step dependencies and their pruning; on the presets, soundness against an
// all-pairs check of conflicting accesses and agreement with the verifier.
#include <gtest/gtest.h>

#include <algorithm>

#include "hand_module.h"
#include "ir/import/import.h"
#include "ir/task_graph_index.h"
#include "ir/verifier.h"

namespace mpk {
namespace {

using testing::EventView;
using testing::events_of;
using testing::HandModule;
using testing::run_pass;
using testing::same_step_reach;

// The dependencies as the scan finds them, nothing pruned.
const PassOptions kNoPrune = {{"prune-cross-step", "false"}, {"prune-same-step", "false"}};

TEST(InferDeps, RawFullOverlap) {
  HandModule h;
  const TensorId t = h.tensor("t");
  h.task({}, {h.cols(t, 0, 64)});
  h.task({h.cols(t, 0, 64)}, {});
  EXPECT_TRUE(run_pass(h.m, "infer-deps"));
  EXPECT_EQ(events_of(h.m, 0), (std::vector<EventView>{{{0}, {1}, 0}}));
  // Task 0 of step k rewrites what task 1 of step k-1 read.
  EXPECT_EQ(events_of(h.m, 1), (std::vector<EventView>{{{1}, {0}, 1}}));
  // Events are numbered by first consumer: the cross-step one (consumer 0) first.
  ASSERT_EQ(h.m.graph.events.size(), 2u);
  EXPECT_EQ(h.m.graph.events[0].step_distance, 1);
  EXPECT_EQ(h.m.graph.events[1].target, 1);
  const TaskGraphIndex g(h.m.graph);
  EXPECT_TRUE(std::ranges::equal(g.waits(1), std::vector<EventId>{1}));
  EXPECT_TRUE(std::ranges::equal(g.triggers(0), std::vector<EventId>{1}));
  EXPECT_TRUE(std::ranges::equal(g.waits(0), std::vector<EventId>{0}));
  EXPECT_TRUE(verify_graph(h.m).empty());
}

TEST(InferDeps, RawPartialOverlap) {
  HandModule h;
  const TensorId t = h.tensor("t");
  h.task({}, {h.cols(t, 0, 32)});
  h.task({}, {h.cols(t, 32, 64)});
  h.task({h.cols(t, 0, 16)}, {});   // first half only
  h.task({h.cols(t, 16, 48)}, {});  // both halves
  h.task({h.cols(t, 32, 33)}, {});  // second half only
  run_pass(h.m, "infer-deps");
  EXPECT_EQ(events_of(h.m, 0), (std::vector<EventView>{
                                   {{0}, {2}, 0}, {{0, 1}, {3}, 0}, {{1}, {4}, 0}}));
  EXPECT_TRUE(verify_graph(h.m).empty());
}

TEST(InferDeps, DisjointRegionsGiveNoEvent) {
  HandModule h;
  const TensorId t = h.tensor("t");
  const TensorId u = h.tensor("u");
  h.task({}, {h.cols(t, 0, 32)});
  h.task({h.cols(t, 32, 64)}, {h.cols(u, 0, 64)});
  EXPECT_FALSE(run_pass(h.m, "infer-deps"));  // no events before, none after
  EXPECT_TRUE(h.m.graph.events.empty());
}

TEST(InferDeps, WarReusedBuffer) {
  HandModule h;
  const TensorId t = h.tensor("t");
  const TensorId u = h.tensor("u");
  h.task({}, {h.cols(t, 0, 64)});                   // 0 writes t
  h.task({h.cols(t, 0, 64)}, {h.cols(u, 0, 64)});   // 1 reads t
  h.task({}, {h.cols(t, 0, 64)});                   // 2 writes t again: after 1 (WAR), 0 (WAW)
  h.task({h.cols(t, 0, 64)}, {});                   // 3 reads the new t only
  run_pass(h.m, "infer-deps", kNoPrune);
  EXPECT_EQ(events_of(h.m, 0),
            (std::vector<EventView>{{{0}, {1}, 0}, {{0, 1}, {2}, 0}, {{2}, {3}, 0}}));
  EXPECT_TRUE(verify_graph(h.m).empty());
}

TEST(InferDeps, WawReusedBufferLastWriterOnly) {
  HandModule h;
  const TensorId t = h.tensor("t");
  h.task({}, {h.cols(t, 0, 64)});
  h.task({}, {h.cols(t, 0, 64)});  // fully covers task 0's write
  h.task({h.cols(t, 0, 64)}, {});
  run_pass(h.m, "infer-deps", kNoPrune);
  EXPECT_EQ(events_of(h.m, 0), (std::vector<EventView>{{{0}, {1}, 0}, {{1}, {2}, 0}}));
  EXPECT_TRUE(verify_graph(h.m).empty());
}

TEST(InferDeps, PartiallyCoveredWriterStays) {
  HandModule h;
  const TensorId t = h.tensor("t");
  h.task({}, {h.cols(t, 0, 64)});
  h.task({}, {h.cols(t, 0, 32)});   // covers half of task 0's write
  h.task({h.cols(t, 40, 64)}, {});  // only task 0 wrote these
  h.task({h.cols(t, 0, 8)}, {});    // conservative: task 0's record still overlaps
  run_pass(h.m, "infer-deps", kNoPrune);
  EXPECT_EQ(events_of(h.m, 0),
            (std::vector<EventView>{{{0}, {1, 2}, 0}, {{0, 1}, {3}, 0}}));
}

TEST(InferDeps, SharedProducerSetIsOneEvent) {
  HandModule h;
  const TensorId t = h.tensor("t");
  h.task({}, {h.cols(t, 0, 32)});
  h.task({}, {h.cols(t, 32, 64)});
  for (int i = 0; i < 3; ++i) h.task({h.cols(t, 0, 64)}, {});
  run_pass(h.m, "infer-deps");
  ASSERT_EQ(events_of(h.m, 0), (std::vector<EventView>{{{0, 1}, {2, 3, 4}, 0}}));
  for (const Event& e : h.m.graph.events) EXPECT_EQ(e.target, static_cast<int64_t>(e.producers.size()));
}

TEST(InferDeps, NoSelfDependency) {
  HandModule h;
  const TensorId t = h.tensor("t");
  h.task({h.cols(t, 0, 64)}, {h.cols(t, 0, 64)});  // in place
  run_pass(h.m, "infer-deps", kNoPrune);
  EXPECT_TRUE(h.m.graph.events.empty());
}

TEST(InferDeps, CrossStepNextToken) {
  HandModule h;
  const TensorId tok = h.tensor("tok", 1);
  const TensorId x = h.tensor("x");
  h.task({h.cols(tok, 0, 1)}, {h.cols(x, 0, 64)});  // 0: embedding-like
  h.task({h.cols(x, 0, 64)}, {h.cols(tok, 0, 1)});  // 1: writes the next token
  run_pass(h.m, "infer-deps", kNoPrune);
  // Same step: 0 -> 1 (RAW on x, and WAR on tok). Across steps: 1 -> 0 (RAW on tok,
  // WAR on x), one event.
  EXPECT_EQ(events_of(h.m, 0), (std::vector<EventView>{{{0}, {1}, 0}}));
  EXPECT_EQ(events_of(h.m, 1), (std::vector<EventView>{{{1}, {0}, 1}}));
  EXPECT_TRUE(verify_graph(h.m).empty());
}

// A chain 0 -> 1 -> 2 -> 3 where 3 writes what 0 reads: the cross-step edge 3 -> 0
// implies all the cross-step WARs of the reused buffers.
HandModule next_token_chain() {
  HandModule h;
  const TensorId tok = h.tensor("tok", 1);
  const TensorId a = h.tensor("a"), b = h.tensor("b"), c = h.tensor("c");
  h.task({h.cols(tok, 0, 1)}, {h.cols(a, 0, 64)});
  h.task({h.cols(a, 0, 64)}, {h.cols(b, 0, 64)});
  h.task({h.cols(b, 0, 64)}, {h.cols(c, 0, 64)});
  h.task({h.cols(c, 0, 64)}, {h.cols(tok, 0, 1)});
  return h;
}

TEST(InferDeps, CrossStepWithoutPruning) {
  HandModule h = next_token_chain();
  run_pass(h.m, "infer-deps", kNoPrune);
  EXPECT_EQ(events_of(h.m, 1), (std::vector<EventView>{
                                   {{1, 3}, {0}, 1}, {{2}, {1}, 1}, {{3}, {2}, 1}}));
}

TEST(InferDeps, PruneCrossStepKeepsOnlyUnimpliedEdges) {
  HandModule h = next_token_chain();
  run_pass(h.m, "infer-deps");
  EXPECT_EQ(events_of(h.m, 1), (std::vector<EventView>{{{3}, {0}, 1}}));
  EXPECT_TRUE(verify_graph(h.m).empty());
}

TEST(InferDeps, PruneKeepsIndependentChains) {
  // Two chains that share nothing: neither's cross-step edge implies the other's.
  HandModule h;
  const TensorId a = h.tensor("a"), b = h.tensor("b");
  h.task({h.cols(a, 0, 64)}, {});
  h.task({}, {h.cols(a, 0, 64)});
  h.task({h.cols(b, 0, 64)}, {});
  h.task({}, {h.cols(b, 0, 64)});
  run_pass(h.m, "infer-deps");
  EXPECT_EQ(events_of(h.m, 1), (std::vector<EventView>{{{1}, {0}, 1}, {{3}, {2}, 1}}));
}

TEST(InferDeps, KvCacheWarAcrossSteps) {
  // kv_append-like writer of the whole cache, attention-like reader: the next step's
  // append waits for this step's reader.
  HandModule h;
  const TensorId cache = h.tensor("cache", 128, TensorRole::kKvCache);
  const TensorId y = h.tensor("y");
  h.task({}, {h.cols(cache, 0, 128)});
  h.task({h.cols(cache, 0, 128)}, {h.cols(y, 0, 64)});
  run_pass(h.m, "infer-deps");
  EXPECT_EQ(events_of(h.m, 0), (std::vector<EventView>{{{0}, {1}, 0}}));
  EXPECT_EQ(events_of(h.m, 1), (std::vector<EventView>{{{1}, {0}, 1}}));
}

TEST(InferDeps, ClearsAStaleSchedule) {
  HandModule h;
  const TensorId t = h.tensor("t");
  h.task({}, {h.cols(t, 0, 64)});
  h.task({h.cols(t, 0, 64)}, {});
  h.m.graph.schedule.policy = "round-robin";
  h.m.graph.schedule.workers = {{1, 0}};
  EXPECT_TRUE(run_pass(h.m, "infer-deps"));
  EXPECT_TRUE(h.m.graph.schedule.empty());
}

TEST(InferDeps, FailsWithoutTasksAndOnBadTensorIds) {
  HandModule h;
  EXPECT_THROW(run_pass(h.m, "infer-deps"), Error);
  h.task({Region{99, {{0, 1}}}}, {});
  try {
    run_pass(h.m, "infer-deps");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tensor id 99"), std::string::npos) << e.what();
  }
}

TEST(InferDeps, RejectsMalformedOption) {
  EXPECT_THROW(find_pass("infer-deps")->create({{"prune-cross-step", "maybe"}}), Error);
  EXPECT_THROW(find_pass("infer-deps")->create({{"prune-same-step", "2"}}), Error);
}

// ---- presets ----

Module decomposed(const std::string& preset) {
  Module m = import_model(preset, ImportOptions{});
  run_pass(m, "decompose");
  return m;
}

bool conflict(const Task& a, const Task& b) {
  auto any = [](const std::vector<Region>& x, const std::vector<Region>& y) {
    for (const Region& r : x)
      for (const Region& s : y)
        if (r.overlaps(s)) return true;
    return false;
  };
  return any(a.writes, b.reads) || any(a.reads, b.writes) || any(a.writes, b.writes);
}

// Distance-0 events go from lower to higher task ids.
void expect_forward(const Module& m) {
  for (const Event& e : m.graph.events) {
    if (e.step_distance != 0) continue;
    for (TaskId p : e.producers)
      for (TaskId c : e.consumers) EXPECT_LT(p, c) << "same-step edges follow task order";
  }
}

// Every pair of conflicting accesses is ordered: within a step by a chain of
// distance-0 events, across steps by a chain through one distance-1 event (or by the
// worker's in-order execution of the same task). And every event edge is a conflict or
// was implied: no invented dependencies within a step.
void check_sound(const std::string& preset, const PassOptions& options) {
  Module m = decomposed(preset);
  run_pass(m, "infer-deps", options);
  const auto& tasks = m.graph.tasks;
  const size_t n = tasks.size();
  expect_forward(m);
  const auto reach = same_step_reach(m);
  std::vector<std::pair<TaskId, TaskId>> cross;
  for (const Event& e : m.graph.events) {
    for (TaskId p : e.producers)
      for (TaskId c : e.consumers) {
        EXPECT_TRUE(conflict(tasks[p], tasks[c])) << preset << ": edge " << p << "->" << c;
        if (e.step_distance == 1) cross.emplace_back(p, c);
      }
  }
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < n; ++j) {
      if (!conflict(tasks[i], tasks[j])) continue;
      if (i < j) {
        EXPECT_TRUE(reach[i][j]) << preset << ": " << i << " before " << j;
      }
      if (i == j || reach[i][j]) continue;
      const bool via_cross = std::any_of(cross.begin(), cross.end(), [&](const auto& xy) {
        return reach[i][xy.first] && reach[xy.second][j];
      });
      EXPECT_TRUE(via_cross) << preset << ": " << i << " in step k-1 before " << j << " in step k";
    }
}

TEST(InferDeps, SoundOnTinyPresets) {
  for (const char* preset : {"tiny", "tiny-qwen2", "tiny-qwen3"}) {
    check_sound(preset, {});
    check_sound(preset, {{"prune-same-step", "false"}});
    check_sound(preset, kNoPrune);
  }
}

TEST(InferDeps, PresetsHaveOneNextTokenEventAndVerify) {
  for (const std::string preset : {"tiny", "tiny-qwen3", "llama-3.2-1b"}) {
    Module m = decomposed(preset);
    run_pass(m, "infer-deps");
    const std::vector<Diagnostic> d = verify_module(m);
    EXPECT_TRUE(d.empty()) << preset << ": " << d.front().rule << ": " << d.front().message;
    const std::vector<EventView> cross = events_of(m, 1);
    ASSERT_EQ(cross.size(), 1u) << preset;
    ASSERT_EQ(cross[0].producers.size(), 1u);
    EXPECT_EQ(m.graph.tasks[cross[0].producers[0]].kind, TaskKind::kArgmaxReduce);
    std::vector<TaskId> embeddings;
    for (size_t t = 0; t < m.graph.tasks.size(); ++t)
      if (m.graph.tasks[t].kind == TaskKind::kEmbedding) embeddings.push_back(static_cast<TaskId>(t));
    EXPECT_EQ(cross[0].consumers, embeddings) << preset;
    // Producer sets are unique per distance.
    for (size_t a = 0; a < m.graph.events.size(); ++a)
      for (size_t b = a + 1; b < m.graph.events.size(); ++b)
        EXPECT_FALSE(m.graph.events[a].producers == m.graph.events[b].producers &&
                     m.graph.events[a].step_distance == m.graph.events[b].step_distance);
  }
}

TEST(InferDeps, RunningTwiceChangesNothing) {
  Module m = decomposed("tiny");
  EXPECT_TRUE(run_pass(m, "infer-deps"));
  const std::vector<EventView> before = events_of(m, 0);
  EXPECT_FALSE(run_pass(m, "infer-deps"));
  EXPECT_EQ(events_of(m, 0), before);
}

}  // namespace
}  // namespace mpk
