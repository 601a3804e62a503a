// Nodes (executions and linear groups), predecessors and the backward walk.
#include "traces/critical_path.h"

#include <algorithm>
#include <numeric>
#include <tuple>
#include <unordered_set>

#include "ir/error.h"

namespace mpk {
namespace {

// The executions, after checking that every task and step exists (an edited trace.db
// must give a message, not an out-of-range index).
const std::vector<Execution>& checked(const Module& m, const std::vector<Execution>& execs,
                                      int32_t num_steps) {
  for (const Execution& x : execs)
    if (x.task < 0 || static_cast<size_t>(x.task) >= m.graph.tasks.size() || x.step < 0 ||
        x.step >= num_steps)
      throw Error("execution of task " + std::to_string(x.task) + " at step " +
                  std::to_string(x.step) + ": the run has no such task or step");
  return execs;
}

std::string strip_layer_prefix(const Operator& op) {
  const std::string prefix = "L" + std::to_string(op.layer) + ".";
  return op.layer >= 0 && op.name.rfind(prefix, 0) == 0 ? op.name.substr(prefix.size()) : op.name;
}

}  // namespace

CriticalPathWalker::CriticalPathWalker(const Module& m, const std::vector<Execution>& execs,
                                       int32_t num_steps)
    : m_(m), execs_(execs), blames_(m, checked(m, execs, num_steps), num_steps),
      node_of_(execs.size(), -1) {
  members_.resize(execs.size());
  std::iota(members_.begin(), members_.end(), 0);
  const auto key = [&](int64_t i) {
    const Execution& x = execs[i];
    return std::make_tuple(x.worker, x.start_ns, x.end_ns, x.step, x.task);
  };
  const auto before = [&](int64_t a, int64_t b) { return key(a) < key(b); };
  // TraceReader::executions comes by (worker, start, task): sorted unless a worker has
  // executions that start together and end apart.
  if (!std::is_sorted(members_.begin(), members_.end(), before))
    std::sort(members_.begin(), members_.end(), before);
  nodes_.reserve(execs.size());
  for (size_t j = 0; j < members_.size(); ++j) {
    const Execution& x = execs[members_[j]];
    const bool joins = !nodes_.empty() && nodes_.back().worker == x.worker &&
                       nodes_.back().step == x.step && nodes_.back().start_ns == x.start_ns &&
                       nodes_.back().end_ns == x.end_ns;
    if (!joins) nodes_.push_back({x.worker, x.step, x.start_ns, x.end_ns, static_cast<int64_t>(j), 0});
    nodes_.back().count++;
    node_of_[static_cast<size_t>(members_[j])] = static_cast<int64_t>(nodes_.size()) - 1;
  }
}

OpId CriticalPathWalker::op_of(int64_t node) const {
  return m_.graph.tasks[execs_[members(node).front()].task].op;
}

// The node's operators, "+"-joined; a task of another kind than its operator's (a
// split attention's partial or merge, an argmax reduce, the kv_append of a fused
// attention) is named "op.kind".
std::string CriticalPathWalker::name_of(int64_t node, bool strip_layer) const {
  std::vector<std::string> names;
  for (int64_t x : members(node)) {
    const Task& task = m_.graph.tasks[execs_[x].task];
    std::string name;
    if (task.op < 0 || static_cast<size_t>(task.op) >= m_.program.ops.size()) {
      name = "op" + std::to_string(task.op);
    } else {
      const Operator& op = m_.program.ops[task.op];
      name = strip_layer ? strip_layer_prefix(op) : op.name;
      if (mpk::name_of(task.kind) != mpk::name_of(op.kind)) name += "." + std::string(mpk::name_of(task.kind));
    }
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  std::string joined;
  for (const std::string& n : names) joined += (joined.empty() ? "" : "+") + n;
  return joined;
}

PathEntry CriticalPathWalker::predecessor(int64_t node) const {
  // A group waits as one unit: for every member's events (the megakernel waits on the
  // leader's, a superset of the others').
  Blame last;
  for (int64_t x : members(node)) {
    const Blame b = blames_.blame(execs_[x]);
    if (b.event >= 0 && (last.event < 0 || b.producer_end_ns > last.producer_end_ns)) last = b;
  }
  // Nodes are ordered by worker, then start: the one before is the worker's previous.
  const int64_t prev = node > 0 && nodes_[node - 1].worker == nodes_[node].worker ? node - 1 : -1;
  PathEntry e;
  e.node = node;
  if (last.event >= 0 && (prev < 0 || last.producer_end_ns >= nodes_[prev].end_ns)) {
    e.pred = node_of(last.producer_exec);
    e.link = PathLink::kDependency;
    e.event = last.event;
  } else if (prev >= 0) {
    e.pred = prev;
    e.link = PathLink::kSameWorker;
  }
  return e;
}

CriticalPath CriticalPathWalker::walk(int64_t from, const std::function<bool(int64_t)>& stop,
                                      int64_t floor_ns) const {
  CriticalPath path;
  std::vector<PathEntry> back;  // newest first
  std::unordered_set<int64_t> on_path;
  for (int64_t x = from; x >= 0;) {
    const PathEntry e = predecessor(x);
    back.push_back(e);
    on_path.insert(x);
    if (e.pred < 0) break;
    if (on_path.count(e.pred)) {
      path.cycle = true;
      break;
    }
    if (stop(e.pred)) {
      path.boundary = e.pred;
      break;
    }
    x = e.pred;
  }
  path.entries.assign(back.rbegin(), back.rend());
  int64_t cursor = floor_ns;
  if (path.boundary >= 0) cursor = std::max(cursor, nodes_[path.boundary].end_ns);
  path.start_ns = cursor;
  for (PathEntry& e : path.entries) {
    const PathNode& n = nodes_[e.node];
    e.gap_ns = std::max<int64_t>(0, n.start_ns - cursor);
    cursor = std::max(cursor, n.start_ns);
    e.run_ns = std::max<int64_t>(0, n.end_ns - cursor);
    cursor = std::max(cursor, n.end_ns);
  }
  path.end_ns = cursor;
  return path;
}

}  // namespace mpk
