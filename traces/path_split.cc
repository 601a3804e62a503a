// Critical-path segments per step and per decoder layer, and their means.
#include "traces/path_split.h"

#include <algorithm>
#include <map>

#include "ir/error.h"
#include "traces/critical_path.h"

namespace mpk {

const char* name_of(SegmentKind k) {
  switch (k) {
    case SegmentKind::kRun: return "run";
    case SegmentKind::kHop: return "hop";
    case SegmentKind::kSameSm: return "same-SM gap";
    case SegmentKind::kStart: return "start";
  }
  return "?";
}

namespace {

// Segments of a walk: per node, the wait before it, then its execution.
PathInstance to_instance(const CriticalPathWalker& w, const CriticalPath& p, bool strip_layer) {
  PathInstance in;
  in.length_ns = p.length_ns();
  in.cycle = p.cycle;
  for (const PathEntry& e : p.entries) {
    const std::string to = w.name_of(e.node, strip_layer);
    Segment wait;
    wait.ns = e.gap_ns;
    if (e.link == PathLink::kNone) {
      wait.kind = SegmentKind::kStart;
      wait.label = "start -> " + to;
    } else {
      wait.kind = e.link == PathLink::kDependency ? SegmentKind::kHop : SegmentKind::kSameSm;
      wait.label = std::string(name_of(wait.kind)) + " " + w.name_of(e.pred, strip_layer) + " -> " + to;
      (wait.kind == SegmentKind::kHop ? in.hops : in.same_sm)++;
    }
    in.segments.push_back(wait);
    in.segments.push_back({SegmentKind::kRun, "run " + to, e.run_ns});
    in.nodes++;
  }
  return in;
}

void append(PathInstance& to, const PathInstance& from) {
  to.length_ns += from.length_ns;
  to.nodes += from.nodes;
  to.hops += from.hops;
  to.same_sm += from.same_sm;
  to.cycle = to.cycle || from.cycle;
  to.segments.insert(to.segments.end(), from.segments.begin(), from.segments.end());
}

// The walks of one run: nodes with their layers and the steps' spans.
class RunWalks {
 public:
  RunWalks(const TraceReader& reader, int64_t run, int32_t num_steps)
      : m_(reader.load_graph(run)), execs_(reader.executions(run)), steps_(reader.steps(run)),
        walker_(m_, execs_, num_steps) {
    OpId first_layer_op = static_cast<OpId>(m_.program.ops.size());
    for (size_t i = 0; i < m_.program.ops.size(); ++i)
      if (m_.program.ops[i].layer >= 0) {
        first_layer_op = static_cast<OpId>(i);
        break;
      }
    // Tasks that only later steps wait for do not end a layer (a kv_append after
    // one-split attention tasks feeds the next step, and may run late in its own).
    const size_t tasks = m_.graph.tasks.size();
    std::vector<char> same_step(tasks, 0), later(tasks, 0);
    for (const Event& e : m_.graph.events)
      for (TaskId t : e.producers)
        if (t >= 0 && static_cast<size_t>(t) < tasks) (e.step_distance == 0 ? same_step : later)[t] = 1;
    for (size_t n = 0; n < walker_.nodes().size(); ++n) {
      const OpId op = walker_.op_of(static_cast<int64_t>(n));
      const bool known = op >= 0 && static_cast<size_t>(op) < m_.program.ops.size();
      layer_.push_back(known ? m_.program.ops[op].layer : -1);
      before_layers_.push_back(known && layer_.back() < 0 && op < first_layer_op);
      const auto members = walker_.members(static_cast<int64_t>(n));
      const TaskId task = members.empty() ? -1 : execs_[static_cast<size_t>(members[0])].task;
      feeds_step_.push_back(task >= 0 && static_cast<size_t>(task) < tasks && (same_step[task] || !later[task]));
    }
  }

  const std::vector<StepRecord>& steps() const { return steps_; }
  int32_t num_layers() const {
    int32_t n = 0;
    for (const Operator& o : m_.program.ops) n = std::max(n, o.layer + 1);
    return n;
  }
  int32_t layer(int64_t node) const { return layer_[static_cast<size_t>(node)]; }
  // Some task of the node's own step waits for it, or no later step's does.
  bool feeds_step(int64_t node) const { return feeds_step_[static_cast<size_t>(node)]; }
  // A layer-less node whose operator comes before the first layer's (the embedding).
  bool before_layers(int64_t node) const { return before_layers_[static_cast<size_t>(node)]; }
  int64_t num_nodes() const { return static_cast<int64_t>(walker_.nodes().size()); }
  const PathNode& node(int64_t n) const { return walker_.nodes()[static_cast<size_t>(n)]; }

  // The last-ending node of step k that `pick` accepts; -1 when none.
  template <class Pick>
  int64_t last_ending(int32_t k, Pick pick) const {
    int64_t best = -1;
    for (size_t n = 0; n < walker_.nodes().size(); ++n) {
      const PathNode& x = walker_.nodes()[n];
      if (x.step == k && pick(static_cast<int64_t>(n)) && (best < 0 || x.end_ns > node(best).end_ns))
        best = static_cast<int64_t>(n);
    }
    return best;
  }

  // The walk from `from` within step k, stopping where `stop` says; empty for -1.
  template <class Stop>
  PathInstance walk(int32_t k, int64_t from, Stop stop, bool strip_layer) const {
    if (from < 0) return {};
    const CriticalPath p = walker_.walk(
        from, [&](int64_t n) { return node(n).step != k || stop(n); }, steps_[k].start_ns);
    return to_instance(walker_, p, strip_layer);
  }

 private:
  Module m_;
  std::vector<Execution> execs_;
  std::vector<StepRecord> steps_;
  CriticalPathWalker walker_;
  std::vector<int32_t> layer_;
  std::vector<bool> before_layers_, feeds_step_;
};

void split_layers(const RunWalks& w, PathSplit& s) {
  const int32_t layers = s.num_layers;
  for (int32_t k = s.first_step; k <= s.last_step; ++k) {
    // Per layer, its last-ending node that its step waits for.
    std::vector<int64_t> last(static_cast<size_t>(layers), -1);
    for (int64_t n = 0; n < w.num_nodes(); ++n) {
      const int32_t l = w.layer(n);
      if (w.node(n).step == k && l >= 0 && w.feeds_step(n) &&
          (last[l] < 0 || w.node(n).end_ns > w.node(last[l]).end_ns))
        last[l] = n;
    }
    for (int32_t l = 1; l < layers; ++l) {
      PathInstance in = w.walk(k, last[l], [&](int64_t n) { return w.layer(n) < l; }, true);
      in.step = k;
      in.layer = l;
      if (last[l] >= 0 && last[l - 1] >= 0)
        in.period_ns = w.node(last[l]).end_ns - w.node(last[l - 1]).end_ns;
      s.layers.push_back(std::move(in));
    }
    const auto outside = [&](int64_t n) { return w.layer(n) >= 0; };
    PathInstance in = w.walk(k, w.last_ending(k, [&](int64_t n) { return w.before_layers(n); }),
                             outside, true);
    const int64_t step_last = w.last_ending(k, [](int64_t) { return true; });
    if (step_last >= 0 && w.layer(step_last) < 0 && !w.before_layers(step_last))
      append(in, w.walk(k, step_last, outside, true));
    in.step = k;
    in.period_ns = w.steps()[k].end_ns - w.steps()[k].start_ns;
    s.outside.push_back(std::move(in));
  }
  s.layer_mean = mean_path(s.layers);
  s.outside_mean = mean_path(s.outside);
}

}  // namespace

PathMean mean_path(const std::vector<PathInstance>& instances) {
  struct Sum {
    SegmentKind kind = SegmentKind::kRun;
    double ns = 0, position = 0, index = 0;
    int64_t count = 0;
  };
  std::map<std::string, Sum> sums;
  PathMean mean;
  mean.instances = static_cast<int64_t>(instances.size());
  for (const PathInstance& in : instances) {
    mean.length_ns += static_cast<double>(in.length_ns);
    mean.period_ns += static_cast<double>(in.period_ns);
    std::map<std::string, Sum> own;  // this instance's segments by label
    int64_t elapsed = 0;
    for (const Segment& seg : in.segments) {
      auto [it, fresh] = own.try_emplace(seg.label);
      if (fresh) {
        it->second.kind = seg.kind;
        it->second.position = in.length_ns > 0 ? static_cast<double>(elapsed) / in.length_ns : 0;
        it->second.index = static_cast<double>(own.size() - 1);
      }
      it->second.ns += static_cast<double>(seg.ns);
      elapsed += seg.ns;
    }
    for (const auto& [label, x] : own) {
      Sum& t = sums[label];
      t.kind = x.kind;
      t.ns += x.ns;
      t.position += x.position;
      t.index += x.index;
      t.count++;
    }
  }
  if (instances.empty()) return mean;
  const double n = static_cast<double>(instances.size());
  mean.length_ns /= n;
  mean.period_ns /= n;
  std::vector<std::pair<double, SegmentMean>> order;  // (mean index, segment)
  for (const auto& [label, t] : sums) {
    const double c = static_cast<double>(t.count);
    order.push_back({t.index / c, {label, t.kind, t.ns / n, t.count, t.position / c}});
  }
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    if (a.second.position != b.second.position) return a.second.position < b.second.position;
    return a.first < b.first;
  });
  for (auto& [index, seg] : order) mean.segments.push_back(std::move(seg));
  return mean;
}

PathSplit compute_path_split(const TraceReader& reader, int64_t run, const PathSplitOptions& o) {
  PathSplit s;
  s.run = reader.run(run);
  const RunWalks w(reader, run, static_cast<int32_t>(s.run.steps));
  const int32_t n = static_cast<int32_t>(w.steps().size());
  if (n == 0) throw Error("run " + std::to_string(run) + " has no steps");
  const int64_t first = o.steps ? o.steps->first : std::min(1, n - 1);
  const int64_t last = o.steps ? o.steps->second : n - 1;
  for (int64_t k : {first, last})
    if (k < 0 || k >= n)
      throw Error("run " + std::to_string(run) + " has no step " + std::to_string(k) + " (steps 0.." +
                  std::to_string(n - 1) + ")");
  if (last < first)
    throw Error("steps " + std::to_string(first) + ":" + std::to_string(last) +
                ": the first step comes after the last");
  s.first_step = static_cast<int32_t>(first);
  s.last_step = static_cast<int32_t>(last);
  if (!o.layers) {
    for (int32_t k = s.first_step; k <= s.last_step; ++k) {
      PathInstance in = w.walk(k, w.last_ending(k, [](int64_t) { return true; }),
                               [](int64_t) { return false; }, false);
      in.step = k;
      in.period_ns = w.steps()[k].end_ns - w.steps()[k].start_ns;
      s.steps.push_back(std::move(in));
    }
    return s;
  }
  s.num_layers = w.num_layers();
  if (s.num_layers < 2)
    throw Error("run " + std::to_string(run) + ": the per-layer path needs at least two decoder " +
                "layers (operators with a layer), the graph has " + std::to_string(s.num_layers));
  split_layers(w, s);
  return s;
}

}  // namespace mpk
