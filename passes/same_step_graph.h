// The same-step dependencies that infer-deps found, with each distinct producer set
// stored once (many consumers share one: every q/k/v task of a layer waits on the same
// residual writers); its transitive reduction; and reachability marks over it. Same-step
// edges go from lower to higher task ids (program order). docs/passes.md, "infer-deps".
// It is not the task-graph index (ir/task_graph_index.h): it holds the dependencies
// infer-deps is still deciding on, before any event exists, grouped by producer set so
// that the reduction and the cross-step pruning search each set once.
#pragma once

#include <vector>

#include "ir/module.h"

namespace mpk {

// For maps keyed by producer sets.
struct TaskListHash {
  size_t operator()(const std::vector<TaskId>& v) const;
};

class SameStepGraph {
 public:
  // producers[c]: the sorted, unique same-step producers of task c (all below c).
  explicit SameStepGraph(const std::vector<std::vector<TaskId>>& producers);

  // Drops from every set each producer that reaches another producer of the same set:
  // the transitive reduction, which keeps the reachability between tasks.
  void reduce();

  // producers[c] := the producer set of task c (as reduced).
  void write_back(std::vector<std::vector<TaskId>>& producers) const;

  // Tasks marked, and sets already expanded, by one or more searches.
  struct Marks {
    std::vector<char> tasks, sets;
  };
  Marks no_marks() const;
  // Marks `from` and every task that reaches it (ancestors) or that it reaches
  // (descendants); tasks already marked are not searched again.
  void mark_ancestors(TaskId from, Marks& marks, std::vector<TaskId>& stack) const;
  void mark_descendants(TaskId from, Marks& marks, std::vector<TaskId>& stack) const;

 private:
  void index_producers();

  std::vector<int32_t> set_of_;                 // per task; -1: it waits on nothing
  std::vector<std::vector<TaskId>> producers_;  // per set, ascending
  std::vector<std::vector<TaskId>> consumers_;  // per set, ascending
  // Per task, the sets it is a producer of, ascending by first consumer (CSR).
  std::vector<int32_t> sets_begin_;
  std::vector<int32_t> sets_items_;
};

}  // namespace mpk
