// The `pinned` policy's moves and the worker lists they edit. A move puts a task on a
// worker right after an anchor task of that worker's list, or first:
//   move  := TASK '>' 'w' WORKER '@' ('first' | 'after:' TASK)      e.g. 12>w3@after:40
//   moves := move (';' move)*
// A move names its place by a neighbour, not an index, so a list of moves replays after
// the base policy changes; one that no longer makes sense (its task, worker or anchor
// is gone, or it can deadlock) is skipped with the reason. studio/schedule_edit.h edits
// schedules with the same moves, so an edited schedule is `pinned` over its policy.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/deadlock.h"
#include "ir/module.h"
#include "ir/task_graph_index.h"
#include "passes/pass.h"

namespace mpk {

struct PinnedMove {
  TaskId task = -1;
  int32_t worker = 0;
  TaskId after = -1;  // the anchor on `worker`; -1: first in its list
  bool operator==(const PinnedMove&) const = default;
};

std::string print_move(const PinnedMove& m);                   // "12>w3@after:40"
std::string print_moves(const std::vector<PinnedMove>& moves);  // joined by ';'
// "" gives no moves. Throws mpk::Error("move N ('<text>'): ...") for a malformed one.
std::vector<PinnedMove> parse_moves(std::string_view text);

// Per-worker ordered task lists with each task's place, edited one move at a time.
// Each move is checked by the deadlock check (ir/deadlock.h): a move that closes a
// cycle of distance-0 events and worker order is refused, so lists that start
// deadlock-free stay so.
class WorkerLists {
 public:
  // `graph` (an index of the graph whose tasks the lists hold; its schedule is not
  // used) must outlive this. Throws mpk::Error for a task out of range or listed
  // twice; tasks need not all be listed (apply refuses to move an unlisted one).
  WorkerLists(const TaskGraphIndex& graph, std::vector<std::vector<TaskId>> lists);

  // Applies `m` and returns "", or returns why it does not apply and leaves the lists
  // as they were: the task or worker does not exist, the anchor is not on the worker
  // (or is the task itself), or the move can deadlock (the cycle, numbered).
  std::string apply(const PinnedMove& m);
  // The same without the deadlock check (for callers that check with the verifier).
  std::string apply_unchecked(const PinnedMove& m);

  // The shortest cycle of distance-0 events and worker order through `t`, starting
  // with t, when t lies on one (else another cycle); empty when the lists cannot
  // deadlock. After one move, any cycle passes through the moved task.
  std::vector<CycleLink> cycle_through(TaskId t) const;

  const std::vector<std::vector<TaskId>>& lists() const { return lists_; }
  std::vector<std::vector<TaskId>> take() { return std::move(lists_); }
  int32_t num_workers() const { return static_cast<int32_t>(lists_.size()); }
  int32_t worker_of(TaskId t) const { return worker_[t]; }      // -1: not listed
  int32_t position_of(TaskId t) const { return position_[t]; }  // -1: not listed

 private:
  std::string check(const PinnedMove& m) const;
  void remove(TaskId t);
  void insert(TaskId t, int32_t worker, int32_t index);

  const TaskGraphIndex& graph_;
  std::vector<std::vector<TaskId>> lists_;
  std::vector<int32_t> worker_, position_;
};

// The assign-sm options that make schedule `s` again: its policy, `workers` and the
// policy's options from its params (a param key with '_' is the option with '-').
PassOptions replay_options(const Schedule& s);

// The assign-sm options of `s` with `moves` added after it: `pinned` over s's policy,
// or, when s is pinned already, over its base with its moves first.
PassOptions pinned_options(const Schedule& s, const std::vector<PinnedMove>& moves);

}  // namespace mpk
