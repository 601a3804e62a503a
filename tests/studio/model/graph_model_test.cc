// GraphModel: the op- and layer-collapsed graphs of the tiny preset (node and edge
// counts against a brute-force walk over its events), expanded layers, the task-node
// limit, and the background layout: it never blocks the caller, finishes with
// positions inside the bounding box, and is cached.
#include "studio/model/graph_model.h"

#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <thread>

#include "tests/studio/panel_test_runs.h"

namespace mpk::studio {
namespace {

using mpk::testing::TempPath;

// Op pairs (a != b) joined by a same-step event, walking every producer-consumer pair.
std::set<std::pair<OpId, OpId>> op_edges(const Module& m) {
  std::set<std::pair<OpId, OpId>> out;
  for (const Event& e : m.graph.events) {
    if (e.step_distance != 0) continue;
    for (TaskId p : e.producers)
      for (TaskId c : e.consumers) {
        const OpId a = m.graph.tasks[p].op, b = m.graph.tasks[c].op;
        if (a != b) out.insert({a, b});
      }
  }
  return out;
}

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

TEST(GraphModel, TinyOpGraph) {
  const Module m = mpk::testing::tiny_scheduled();
  const GraphLayout g = build_graph(m, {1, GraphMode::kOps, {}});
  ASSERT_EQ(g.nodes.size(), m.program.ops.size());
  const auto expected = op_edges(m);
  ASSERT_EQ(g.edges.size(), expected.size());
  for (const GraphEdge& e : g.edges)
    EXPECT_TRUE(expected.count({g.nodes[e.from].op, g.nodes[e.to].op}))
        << g.nodes[e.from].label << " -> " << g.nodes[e.to].label;
  // Each node stands for its operator's tasks; together they are every task once.
  size_t tasks = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    EXPECT_EQ(g.nodes[i].kind, NodeKind::kOp);
    EXPECT_EQ(g.nodes[i].op, static_cast<OpId>(i));
    EXPECT_EQ(first_line(g.nodes[i].label), m.program.ops[i].name);
    for (TaskId t : g.nodes[i].tasks) EXPECT_EQ(m.graph.tasks[t].op, static_cast<OpId>(i));
    tasks += g.nodes[i].tasks.size();
  }
  EXPECT_EQ(tasks, m.graph.tasks.size());
}

TEST(GraphModel, TinyLayerGraph) {
  const Module m = mpk::testing::tiny_scheduled();
  const GraphLayout g = build_graph(m, {1, GraphMode::kLayers, {}});
  // Two layers plus the operators outside them.
  std::vector<std::string> names;
  for (const GraphNode& n : g.nodes) names.push_back(first_line(n.label));
  EXPECT_EQ(names, (std::vector<std::string>{"embed", "layer 0", "layer 1", "final_norm", "lm_head", "argmax"}));
  std::set<std::pair<std::string, std::string>> edges;
  for (const GraphEdge& e : g.edges) edges.insert({names[e.from], names[e.to]});
  // The residual stream runs through the layers. The embedding must read the token
  // before argmax overwrites it, but that chain already orders them: infer-deps drops
  // the implied write-after-read edge embed -> argmax.
  const std::set<std::pair<std::string, std::string>> expected = {
      {"embed", "layer 0"}, {"layer 0", "layer 1"}, {"layer 1", "final_norm"},
      {"final_norm", "lm_head"}, {"lm_head", "argmax"}};
  EXPECT_EQ(edges, expected);
  size_t layer0_ops = 0;
  for (const Operator& o : m.program.ops) layer0_ops += o.layer == 0 ? 1 : 0;
  EXPECT_EQ(g.nodes[1].label, "layer 0\n" + std::to_string(layer0_ops) + " ops, " +
                                  std::to_string(g.nodes[1].tasks.size()) + " tasks");
}

TEST(GraphModel, ExpandedLayerShowsItsTasksOnly) {
  const Module m = mpk::testing::tiny_scheduled();
  const GraphLayout g = build_graph(m, {1, GraphMode::kLayers, {0}});
  size_t layer0_tasks = 0;
  for (const Task& t : m.graph.tasks) layer0_tasks += m.program.ops[t.op].layer == 0 ? 1 : 0;
  size_t task_nodes = 0, layer_nodes = 0, event_nodes = 0;
  std::vector<int> seen(m.graph.tasks.size(), 0);
  for (const GraphNode& n : g.nodes) {
    task_nodes += n.kind == NodeKind::kTask;
    layer_nodes += n.kind == NodeKind::kLayer;
    event_nodes += n.kind == NodeKind::kEvent;
    if (n.kind == NodeKind::kTask) {
      ASSERT_EQ(n.tasks.size(), 1u);
      EXPECT_EQ(n.layer, 0);
      ASSERT_GE(n.cluster, 0);
      EXPECT_EQ(g.clusters[static_cast<size_t>(n.cluster)].op, n.op);
    }
    if (n.kind == NodeKind::kLayer) {
      EXPECT_EQ(n.layer, 1);
    }
    for (TaskId t : n.tasks) seen[t]++;
  }
  EXPECT_EQ(task_nodes, layer0_tasks);
  EXPECT_EQ(layer_nodes, 1u);
  // One frame per operator of the layer.
  std::set<OpId> layer0_ops;
  for (const Task& t : m.graph.tasks)
    if (m.program.ops[t.op].layer == 0) layer0_ops.insert(t.op);
  EXPECT_EQ(g.clusters.size(), layer0_ops.size());
  EXPECT_EQ(g.nodes.size(), task_nodes + 1 + 4 + event_nodes);
  for (int count : seen) EXPECT_EQ(count, 1);
  // An event node stands between several producers and several consumers.
  std::vector<int> in(g.nodes.size(), 0), out(g.nodes.size(), 0);
  for (const GraphEdge& e : g.edges) {
    out[e.from]++;
    in[e.to]++;
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (g.nodes[i].kind != NodeKind::kEvent) continue;
    EXPECT_GT(in[i], 1);
    EXPECT_GT(out[i], 1);
  }
  EXPECT_THROW(build_graph(m, {1, GraphMode::kLayers, {7}}), Error);
}

TEST(GraphModel, RefusesTooManyTaskNodes) {
  mpk::testing::GraphBuilder b(1);
  const OpId op = b.op("L0.big", OpKind::kLinear, 0);
  std::vector<TaskId> tasks;
  for (size_t i = 0; i <= kMaxTaskNodes; ++i) tasks.push_back(b.task(op, 1));
  const Module m = b.schedule({tasks});
  EXPECT_EQ(build_graph(m, {1, GraphMode::kLayers, {}}).nodes.size(), 1u);
  try {
    build_graph(m, {1, GraphMode::kLayers, {0}});
    FAIL() << "expanding " << tasks.size() << " tasks was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("more than 2500"), std::string::npos) << e.what();
  }
}

// Polls until the layout is there (bounded, so that a failure cannot hang the test).
GraphModel::Result wait_for(GraphModel& gm, int64_t run, const GraphKey& key) {
  for (int i = 0; i < 60000; ++i) {
    GraphModel::Result r = gm.request(run, key);
    if (!r.pending) return r;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return {nullptr, true, "still pending after a minute"};
}

TEST(GraphModel, BackgroundLayoutIsCachedAndNeverBlocks) {
  TempPath path("graph_tiny.db");
  const int64_t run = mpk::testing::store_tiny(path.str(), 2);
  const int64_t graph = TraceReader(path.str()).run(run).graph;
  GraphModel gm(path.str());
  const GraphKey key{graph, GraphMode::kOps, {}};
  {
    // With Graphviz held by this thread the job cannot finish: request must return.
    const std::unique_lock<std::mutex> hold = graphviz_lock();
    const GraphModel::Result r = gm.request(run, key);
    EXPECT_TRUE(r.pending);
    EXPECT_EQ(r.layout, nullptr);
    EXPECT_EQ(gm.request(run, key).layout, nullptr);
    EXPECT_EQ(gm.jobs_in_flight(), 1u);
  }
  const GraphModel::Result r = wait_for(gm, run, key);
  ASSERT_TRUE(r.error.empty()) << r.error;
  ASSERT_NE(r.layout, nullptr);
  const GraphLayout& g = *r.layout;
  EXPECT_EQ(gm.jobs_in_flight(), 0u);
  EXPECT_GT(g.width, 0);
  EXPECT_GT(g.height, 0);
  for (const GraphNode& n : g.nodes) {
    EXPECT_GT(n.width, 0);
    EXPECT_GE(n.x - n.width / 2, -1.0);
    EXPECT_LE(n.x + n.width / 2, g.width + 1.0);
    EXPECT_GE(n.y - n.height / 2, -1.0);
    EXPECT_LE(n.y + n.height / 2, g.height + 1.0);
  }
  // Top to bottom: every edge goes down, as a spline of 1 + 3k points.
  for (const GraphEdge& e : g.edges) {
    EXPECT_LT(g.nodes[e.from].y, g.nodes[e.to].y) << g.nodes[e.from].label << " -> " << g.nodes[e.to].label;
    ASSERT_GE(e.points.size(), 8u);
    EXPECT_EQ((e.points.size() / 2 - 1) % 3, 0u);
  }
  // Cached: the same layout object, no new job.
  EXPECT_EQ(gm.request(run, key).layout, r.layout);
  EXPECT_EQ(gm.jobs_in_flight(), 0u);
  // Another key is another layout; a bad layer comes back as an error.
  const GraphModel::Result layers = wait_for(gm, run, {graph, GraphMode::kLayers, {1}});
  ASSERT_NE(layers.layout, nullptr) << layers.error;
  EXPECT_NE(layers.layout, r.layout);
  // Task nodes lie inside their operator's frame.
  ASSERT_FALSE(layers.layout->clusters.empty());
  for (const GraphNode& n : layers.layout->nodes) {
    if (n.cluster < 0) continue;
    const GraphCluster& c = layers.layout->clusters[static_cast<size_t>(n.cluster)];
    EXPECT_GE(n.x - n.width / 2, c.x0 - 0.5);
    EXPECT_LE(n.x + n.width / 2, c.x1 + 0.5);
    EXPECT_GE(n.y - n.height / 2, c.y0 - 0.5);
    EXPECT_LE(n.y + n.height / 2, c.y1 + 0.5);
  }
  const GraphModel::Result bad = wait_for(gm, run, {graph, GraphMode::kLayers, {9}});
  EXPECT_EQ(bad.layout, nullptr);
  EXPECT_NE(bad.error.find("no layer 9"), std::string::npos) << bad.error;
}

}  // namespace
}  // namespace mpk::studio
