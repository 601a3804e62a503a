// The critical-path walk over a run's executions, the one rule that `mpk trace stats`
// and `mpk trace path` share. From an execution, step backwards; the predecessor of
// each execution is whichever ended later: the last-ending producer of the events it
// waited on (same step, or the step `step_distance` earlier) — a dependency hop — or
// the same worker's previous execution — a same-SM wait. Executions that share worker,
// step, start and end are one node (the megakernel runs a linear group such as
// q/k/v or gate/up as one unit and records every member with the same times).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "ir/module.h"
#include "traces/run_derive.h"
#include "traces/trace_db.h"

namespace mpk {

// One execution, or the members of a linear group.
struct PathNode {
  int32_t worker = 0, step = 0;
  int64_t start_ns = 0, end_ns = 0;
  int64_t first = 0, count = 0;  // its members: CriticalPathWalker::members
};

enum class PathLink : uint8_t {
  kNone,        // nothing ran before it that it waited for (the run's first tasks)
  kDependency,  // the last-ending producer of an event it waited on
  kSameWorker,  // the execution before it on its worker
};

struct PathEntry {
  int64_t node = -1;
  int64_t pred = -1;  // the node that let it start (for the first entry: the boundary); -1 none
  PathLink link = PathLink::kNone;
  EventId event = -1;  // kDependency: the event whose last release it waited for
  int64_t gap_ns = 0;  // waiting before it: from the previous entry's end (the path's start)
  int64_t run_ns = 0;  // its execution, from max(start, the previous entry's end)
};

// A walk's result. The entries tile [start_ns, end_ns] with no overlap: the sum of
// every gap_ns and run_ns is end_ns - start_ns, whatever the input (times before the
// path's start, or overlapping an earlier entry, are clipped).
struct CriticalPath {
  std::vector<PathEntry> entries;  // in time order
  int64_t boundary = -1;           // the node where the walk stopped (not on the path); -1 none
  bool cycle = false;              // the walk met a node already on the path (an edited trace)
  int64_t start_ns = 0, end_ns = 0;
  int64_t length_ns() const { return end_ns - start_ns; }
};

class CriticalPathWalker {
 public:
  // Keeps references to `m` and `execs`. Throws mpk::Error naming an execution whose
  // task or step the module does not have.
  CriticalPathWalker(const Module& m, const std::vector<Execution>& execs, int32_t num_steps);

  const std::vector<PathNode>& nodes() const { return nodes_; }
  // Indices into the executions, by task id.
  std::span<const int64_t> members(int64_t node) const {
    const PathNode& n = nodes_[static_cast<size_t>(node)];
    return {members_.data() + n.first, static_cast<size_t>(n.count)};
  }
  int64_t node_of(int64_t exec) const { return node_of_[static_cast<size_t>(exec)]; }
  // The operator of a node's first member.
  OpId op_of(int64_t node) const;
  // The members' operator names, each once, joined by '+' ("L3.q_proj+L3.k_proj");
  // `strip_layer` drops each name's "L{layer}." prefix ("q_proj+k_proj").
  std::string name_of(int64_t node, bool strip_layer) const;
  // `node`'s entry before timing: the node whose end let it start last (pred), how
  // (link) and through which event; pred -1 and kNone when none.
  PathEntry predecessor(int64_t node) const;

  // Walks back from `from` until a predecessor that `stop` accepts (the boundary, not
  // on the path), no predecessor, or a node already on the path (a cycle, which only an
  // edited trace has: the walk never visits a node twice). The path starts at the
  // boundary's end, and never before `floor_ns` (a step's start).
  CriticalPath walk(int64_t from, const std::function<bool(int64_t node)>& stop,
                    int64_t floor_ns) const;

  // The blame index the walk uses (the studio answers its wait queries with it).
  const BlameIndex& blames() const { return blames_; }

 private:
  const Module& m_;
  const std::vector<Execution>& execs_;
  BlameIndex blames_;
  std::vector<PathNode> nodes_;
  std::vector<int64_t> members_;           // executions by (worker, start, end, step, task)
  std::vector<int64_t> node_of_;  // execution -> node
};

}  // namespace mpk
