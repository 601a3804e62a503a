// A dynamic check, independent of the events, that every (task, step) execution sees
// the memory state of sequential execution (steps in order, operators in program
// order). For each pair of tasks whose regions overlap with at least one write, the one
// earlier in program order must have completed exactly step k when the later one starts
// step k, and the later one exactly step k - 1 when the earlier one starts step k; two
// shares of one cooperative operator (which write whichever units they claim on the
// GPU), step k - 1 or k. A
// missing or wrong event lets some order violate this; the executor then throws instead
// of silently computing a wrong result.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "ir/module.h"

namespace mpk {

class RaceChecker {
 public:
  // Region overlaps are found per tensor; tasks of one operator and phase (ir/module.h
  // task_phases) never conflict with each other, but for cooperative shares.
  explicit RaceChecker(const Module& m);

  // Throws mpk::Error naming both tasks when `task` may not start step `step` given
  // how many steps each task has completed (`done`).
  void check(const Module& m, TaskId task, int64_t step,
             const std::vector<std::atomic<int64_t>>& done) const;

  // Number of conflicting (ordered) pairs, for tests.
  size_t num_pairs() const;

 private:
  // ahead: 1 when `other` precedes in program order (it must have done step k), 0 when
  // it follows (step k - 1); kPeer for another share of a cooperative operator, which
  // may write any unit (either).
  static constexpr int32_t kPeer = 2;
  struct Conflict {
    TaskId other;
    int32_t ahead;
  };
  std::vector<std::vector<Conflict>> conflicts_;
};

}  // namespace mpk
