// The op/layer graph of a scheduled module, its Graphviz layout, and the background
// layout cache.
#include "studio/model/graph_model.h"

#ifdef MPK_STUDIO_HAS_GRAPHVIZ
#include <graphviz/gvc.h>
#endif

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <set>

#include "ir/error.h"
#include "traces/trace_db.h"

namespace mpk::studio {
namespace {

// Node sizes in points, from the label: a 7-point-wide glyph, 15-point lines.
void size_node(GraphNode& n) {
  if (n.kind == NodeKind::kEvent) {
    n.width = n.height = 8;
    return;
  }
  if (n.kind == NodeKind::kTask) {
    n.width = 8 + 7.0 * static_cast<double>(n.label.size());
    n.height = 20;
    return;
  }
  size_t longest = 0, lines = 1, cur = 0;
  for (char c : n.label) {
    if (c == '\n') {
      ++lines;
      cur = 0;
    } else {
      longest = std::max(longest, ++cur);
    }
  }
  n.width = 16 + 7.0 * static_cast<double>(longest);
  n.height = 10 + 15.0 * static_cast<double>(lines);
}

std::string plural(size_t n, const char* what) {
  return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
}

}  // namespace

GraphLayout build_graph(const Module& m, const GraphKey& key) {
  GraphLayout g;
  g.key = key;
  const std::vector<Operator>& ops = m.program.ops;
  const std::vector<Task>& tasks = m.graph.tasks;
  std::vector<std::vector<TaskId>> op_tasks(ops.size());
  for (size_t t = 0; t < tasks.size(); ++t)
    if (tasks[t].op >= 0 && static_cast<size_t>(tasks[t].op) < ops.size())
      op_tasks[static_cast<size_t>(tasks[t].op)].push_back(static_cast<TaskId>(t));

  const std::set<int32_t> expanded(key.expanded.begin(), key.expanded.end());
  std::set<int32_t> layers;
  for (const Operator& o : ops)
    if (o.layer >= 0) layers.insert(o.layer);
  size_t task_nodes = 0;
  for (int32_t l : expanded) {
    if (!layers.count(l)) throw Error("graph: no layer " + std::to_string(l) + " to expand");
    for (size_t o = 0; o < ops.size(); ++o)
      if (ops[o].layer == l) task_nodes += op_tasks[o].size();
  }
  if (task_nodes > kMaxTaskNodes)
    throw Error("graph: expanding " + plural(expanded.size(), "layer") + " gives " +
                std::to_string(task_nodes) + " task nodes, more than " +
                std::to_string(kMaxTaskNodes) + "; collapse some");

  // Nodes in program order; every task maps to exactly one node.
  std::vector<int32_t> node_of_task(tasks.size(), -1);
  std::map<int32_t, int32_t> layer_node;
  for (size_t o = 0; o < ops.size(); ++o) {
    const Operator& op = ops[o];
    if (expanded.count(op.layer)) {
      if (op_tasks[o].empty()) continue;
      g.clusters.push_back({static_cast<OpId>(o), op.name});
      for (size_t i = 0; i < op_tasks[o].size(); ++i) {
        const TaskId t = op_tasks[o][i];
        GraphNode n;
        n.kind = NodeKind::kTask;
        n.op = static_cast<OpId>(o);
        n.layer = op.layer;
        n.tasks = {t};
        n.cluster = static_cast<int32_t>(g.clusters.size()) - 1;
        n.label = "#" + std::to_string(i);
        node_of_task[t] = static_cast<int32_t>(g.nodes.size());
        g.nodes.push_back(std::move(n));
      }
      continue;
    }
    int32_t index;
    if (key.mode == GraphMode::kLayers && op.layer >= 0) {
      auto [it, fresh] = layer_node.emplace(op.layer, static_cast<int32_t>(g.nodes.size()));
      if (fresh) {
        GraphNode n;
        n.kind = NodeKind::kLayer;
        n.layer = op.layer;
        g.nodes.push_back(std::move(n));
      }
      index = it->second;
    } else {
      GraphNode n;
      n.kind = NodeKind::kOp;
      n.op = static_cast<OpId>(o);
      n.layer = op.layer;
      n.label = op.name + "\n" + std::string(name_of(op.kind)) + ", " + plural(op_tasks[o].size(), "task");
      index = static_cast<int32_t>(g.nodes.size());
      g.nodes.push_back(std::move(n));
    }
    GraphNode& n = g.nodes[static_cast<size_t>(index)];
    n.tasks.insert(n.tasks.end(), op_tasks[o].begin(), op_tasks[o].end());
    for (TaskId t : op_tasks[o]) node_of_task[t] = index;
  }
  for (auto& [layer, index] : layer_node) {
    GraphNode& n = g.nodes[static_cast<size_t>(index)];
    size_t n_ops = 0;
    for (const Operator& o : ops) n_ops += o.layer == layer ? 1 : 0;
    n.label = "layer " + std::to_string(layer) + "\n" + plural(n_ops, "op") + ", " +
              plural(n.tasks.size(), "task");
  }

  // Edges from same-step events. An event between several task nodes on both sides
  // becomes a node when that needs fewer edges than all pairs.
  std::set<std::pair<int32_t, int32_t>> edges;
  std::map<std::pair<std::vector<int32_t>, std::vector<int32_t>>, int32_t> event_nodes;
  for (const Event& e : m.graph.events) {
    if (e.step_distance != 0) continue;
    std::set<int32_t> from, to;
    for (TaskId t : e.producers)
      if (t >= 0 && static_cast<size_t>(t) < tasks.size() && node_of_task[t] >= 0) from.insert(node_of_task[t]);
    for (TaskId t : e.consumers)
      if (t >= 0 && static_cast<size_t>(t) < tasks.size() && node_of_task[t] >= 0) to.insert(node_of_task[t]);
    auto has_task_node = [&](const std::set<int32_t>& s) {
      return std::any_of(s.begin(), s.end(), [&](int32_t n) { return g.nodes[n].kind == NodeKind::kTask; });
    };
    const bool via_event = from.size() > 1 && to.size() > 1 &&
                           from.size() * to.size() > from.size() + to.size() &&
                           (has_task_node(from) || has_task_node(to));
    if (!via_event) {
      for (int32_t a : from)
        for (int32_t b : to)
          if (a != b) edges.insert({a, b});
      continue;
    }
    auto k = std::make_pair(std::vector<int32_t>(from.begin(), from.end()),
                            std::vector<int32_t>(to.begin(), to.end()));
    auto [it, fresh] = event_nodes.emplace(std::move(k), static_cast<int32_t>(g.nodes.size()));
    if (!fresh) continue;
    GraphNode n;
    n.kind = NodeKind::kEvent;
    g.nodes.push_back(std::move(n));
    for (int32_t a : from) edges.insert({a, it->second});
    for (int32_t b : to) edges.insert({it->second, b});
  }
  for (const auto& [a, b] : edges) g.edges.push_back({a, b, {}, 0, 0});
  for (GraphNode& n : g.nodes) size_node(n);
  return g;
}

std::unique_lock<std::mutex> graphviz_lock() {
  static std::mutex graphviz_mutex;
  return std::unique_lock<std::mutex>(graphviz_mutex);
}

#ifndef MPK_STUDIO_HAS_GRAPHVIZ
void layout_graph(GraphLayout&) {
  throw Error("graph: mpk-studio was built without Graphviz (install libgraphviz-dev)");
}
#else
void layout_graph(GraphLayout& g) {
  const std::unique_lock<std::mutex> lock = graphviz_lock();
  static GVC_t* gvc = gvContext();
  if (!gvc) throw Error("graph: cannot start Graphviz");

  char name[] = "g";
  Agraph_t* graph = agopen(name, Agdirected, nullptr);
  if (!graph) throw Error("graph: cannot create a Graphviz graph");
  auto set_default = [&](int kind, const char* attr, const char* value) {
    return agattr(graph, kind, const_cast<char*>(attr), const_cast<char*>(value));
  };
  set_default(AGRAPH, "rankdir", "TB");
  // Task nodes sit close together; operator nodes get more room.
  set_default(AGRAPH, "nodesep", g.clusters.empty() ? "0.25" : "0.1");
  set_default(AGRAPH, "ranksep", "0.35");
  // Cluster labels are drawn by the studio; Graphviz reserves their room with a
  // monospace font of about the studio font's width (7 points a character).
  Agsym_t* cluster_label = set_default(AGRAPH, "label", "");
  set_default(AGRAPH, "fontname", "Courier");
  set_default(AGRAPH, "fontsize", "12");
  set_default(AGRAPH, "labeljust", "l");
  Agsym_t* shape = set_default(AGNODE, "shape", "box");
  set_default(AGNODE, "fixedsize", "true");
  set_default(AGNODE, "label", "");
  Agsym_t* width = set_default(AGNODE, "width", "1");
  Agsym_t* height = set_default(AGNODE, "height", "0.5");
  set_default(AGEDGE, "arrowsize", "0.6");

  std::vector<Agraph_t*> clusters;
  char buf[64];
  for (size_t i = 0; i < g.clusters.size(); ++i) {
    std::snprintf(buf, sizeof buf, "cluster_%zu", i);
    Agraph_t* sub = agsubg(graph, buf, 1);
    agxset(sub, cluster_label, const_cast<char*>(g.clusters[i].label.c_str()));
    clusters.push_back(sub);
  }
  std::vector<Agnode_t*> nodes;
  nodes.reserve(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    std::snprintf(buf, sizeof buf, "n%zu", i);
    Agnode_t* n = agnode(graph, buf, 1);
    if (g.nodes[i].cluster >= 0) agsubnode(clusters[static_cast<size_t>(g.nodes[i].cluster)], n, 1);
    std::snprintf(buf, sizeof buf, "%.4f", g.nodes[i].width / 72.0);
    agxset(n, width, buf);
    std::snprintf(buf, sizeof buf, "%.4f", g.nodes[i].height / 72.0);
    agxset(n, height, buf);
    if (g.nodes[i].kind == NodeKind::kEvent) agxset(n, shape, const_cast<char*>("circle"));
    nodes.push_back(n);
  }
  std::vector<Agedge_t*> edges;
  edges.reserve(g.edges.size());
  for (const GraphEdge& e : g.edges)
    edges.push_back(agedge(graph, nodes[static_cast<size_t>(e.from)], nodes[static_cast<size_t>(e.to)], nullptr, 1));

  const auto t0 = std::chrono::steady_clock::now();
  if (gvLayout(gvc, graph, "dot") != 0) {
    agclose(graph);
    throw Error("graph: Graphviz dot layout failed");
  }
  g.layout_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  const boxf bb = GD_bb(graph);
  g.width = bb.UR.x - bb.LL.x;
  g.height = bb.UR.y - bb.LL.y;
  auto to_x = [&](double x) { return x - bb.LL.x; };
  auto to_y = [&](double y) { return bb.UR.y - y; };
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    GraphNode& n = g.nodes[i];
    n.x = to_x(ND_coord(nodes[i]).x);
    n.y = to_y(ND_coord(nodes[i]).y);
    n.width = ND_width(nodes[i]) * 72.0;
    n.height = ND_height(nodes[i]) * 72.0;
  }
  for (size_t i = 0; i < g.clusters.size(); ++i) {
    const boxf cb = GD_bb(clusters[i]);
    GraphCluster& c = g.clusters[i];
    c.x0 = to_x(cb.LL.x);
    c.x1 = to_x(cb.UR.x);
    c.y0 = to_y(cb.UR.y);
    c.y1 = to_y(cb.LL.y);
  }
  for (size_t i = 0; i < g.edges.size(); ++i) {
    GraphEdge& e = g.edges[i];
    const splines* spl = edges[i] ? ED_spl(edges[i]) : nullptr;
    if (!spl || spl->size == 0) continue;
    const bezier& bz = spl->list[0];
    for (int p = 0; p < bz.size; ++p) {
      e.points.push_back(to_x(bz.list[p].x));
      e.points.push_back(to_y(bz.list[p].y));
    }
    const pointf tip = bz.eflag ? bz.ep : bz.list[bz.size - 1];
    e.head_x = to_x(tip.x);
    e.head_y = to_y(tip.y);
  }
  gvFreeLayout(gvc, graph);
  agclose(graph);
}
#endif

GraphModel::GraphModel(std::string db_path) : db_path_(std::move(db_path)) {}

GraphModel::~GraphModel() {
  for (auto& [key, entry] : cache_)
    if (entry.job.valid()) entry.job.wait();
}

std::shared_ptr<const Module> GraphModel::module_for(int64_t run, int64_t graph) {
  const std::lock_guard<std::mutex> lock(modules_mutex_);
  auto it = modules_.find(graph);
  if (it != modules_.end()) return it->second;
  TraceReader reader(db_path_);
  const RunRecord r = reader.run(run);
  if (r.graph != graph)
    throw Error("graph: run " + std::to_string(run) + " has graph " + std::to_string(r.graph) +
                ", not " + std::to_string(graph));
  auto m = std::make_shared<const Module>(reader.load_graph(run));
  modules_.emplace(graph, m);
  return m;
}

GraphModel::Result GraphModel::request(int64_t run, const GraphKey& key) {
  auto it = cache_.find(key);
  if (it == cache_.end()) {
    Entry e;
    e.job = std::async(std::launch::async, [this, run, key] {
      auto layout = std::make_shared<GraphLayout>(build_graph(*module_for(run, key.graph), key));
      layout_graph(*layout);
      return layout;
    });
    it = cache_.emplace(key, std::move(e)).first;
  }
  Entry& e = it->second;
  if (e.job.valid()) {
    if (e.job.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return {nullptr, true, ""};
    try {
      e.layout = e.job.get();
    } catch (const std::exception& ex) {
      e.error = ex.what();
    }
  }
  return {e.layout.get(), false, e.error};
}

size_t GraphModel::jobs_in_flight() const {
  size_t n = 0;
  for (const auto& [key, entry] : cache_)
    n += entry.job.valid() && entry.job.wait_for(std::chrono::seconds(0)) != std::future_status::ready;
  return n;
}

}  // namespace mpk::studio
