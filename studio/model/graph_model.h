// The graph panel's headless model: the operator-level graph of a run's scheduled
// module (one node per operator, or per decoder layer with the operators outside the
// layers kept), an edge A -> B when a task of A triggers an event (step distance 0)
// that a task of B waits on. Chosen layers can be expanded into their tasks; where many
// task producers feed many task consumers through one event, the event becomes a small
// node so that edges stay few. Layouts come from Graphviz `dot` (cgraph + gvc), computed
// on a background thread and cached by (graph, mode, expanded layers).
#pragma once

#include <compare>
#include <cstdint>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ir/module.h"

namespace mpk::studio {

enum class GraphMode : uint8_t { kOps, kLayers };

struct GraphKey {
  int64_t graph = 0;                // trace.db graph id
  GraphMode mode = GraphMode::kOps;
  std::vector<int32_t> expanded;    // layers shown as tasks, sorted, unique
  auto operator<=>(const GraphKey&) const = default;
};

enum class NodeKind : uint8_t { kOp, kLayer, kTask, kEvent };

struct GraphNode {
  NodeKind kind = NodeKind::kOp;
  std::string label;
  OpId op = -1;          // kOp and kTask
  int32_t layer = -1;    // kLayer; the operator's layer for kOp and kTask
  std::vector<TaskId> tasks;  // the tasks this node stands for (none for kEvent)
  int32_t cluster = -1;       // kTask: index into GraphLayout::clusters
  // After layout: centre and size in points, y growing downwards from the top.
  double x = 0, y = 0, width = 0, height = 0;
};

struct GraphEdge {
  int32_t from = -1, to = -1;  // node indices
  // After layout: a cubic B-spline as Graphviz gives it (p0, then c1 c2 p per segment),
  // in the nodes' coordinates; `head` is the arrow tip (equal to the last point when
  // Graphviz leaves no room for an arrow).
  std::vector<double> points;  // x0, y0, x1, y1, ...
  double head_x = 0, head_y = 0;
};

// The task nodes of one operator of an expanded layer, framed together.
struct GraphCluster {
  OpId op = -1;
  std::string label;  // the operator's name
  // After layout: the frame, in the nodes' coordinates (the label sits at its top).
  double x0 = 0, y0 = 0, x1 = 0, y1 = 0;
};

struct GraphLayout {
  GraphKey key;
  std::vector<GraphNode> nodes;
  std::vector<GraphEdge> edges;
  std::vector<GraphCluster> clusters;
  double width = 0, height = 0;  // bounding box, points
  double layout_seconds = 0;     // time spent in gvLayout
};

// More task nodes than this are refused (dot on thousands of tasks takes minutes).
inline constexpr size_t kMaxTaskNodes = 2500;

// The graph for `key` without positions. Throws mpk::Error when the expanded layers
// would give more than kMaxTaskNodes task nodes, or name a layer the module lacks.
GraphLayout build_graph(const Module& m, const GraphKey& key);

// Graphviz keeps global state and is not thread-safe: every use of it in the process
// holds this lock.
std::unique_lock<std::mutex> graphviz_lock();

// Lays `g` out with dot (holding graphviz_lock()) and fills in positions, sizes and
// splines. Throws mpk::Error when Graphviz fails or the build has no Graphviz.
void layout_graph(GraphLayout& g);

// Asynchronous, cached layouts for the graphs of the runs in one trace.db. request()
// never blocks on a layout: the first call for a key starts a job on a background
// thread (which opens its own reader on the file), and later calls return the result
// once it is there.
class GraphModel {
 public:
  explicit GraphModel(std::string db_path);
  ~GraphModel();  // waits for jobs still running
  GraphModel(const GraphModel&) = delete;
  GraphModel& operator=(const GraphModel&) = delete;

  struct Result {
    const GraphLayout* layout = nullptr;  // null while pending or after a failure
    bool pending = false;
    std::string error;                    // the job's failure, "" otherwise
  };
  // `run` names the run whose graph `key.graph` is (loaded once per graph).
  Result request(int64_t run, const GraphKey& key);
  // Jobs still running.
  size_t jobs_in_flight() const;
  const std::string& db_path() const { return db_path_; }

 private:
  struct Entry {
    std::future<std::shared_ptr<GraphLayout>> job;
    std::shared_ptr<GraphLayout> layout;
    std::string error;
  };
  std::shared_ptr<const Module> module_for(int64_t run, int64_t graph);

  std::string db_path_;
  std::map<GraphKey, Entry> cache_;
  std::mutex modules_mutex_;
  std::map<int64_t, std::shared_ptr<const Module>> modules_;  // by graph id
};

}  // namespace mpk::studio
