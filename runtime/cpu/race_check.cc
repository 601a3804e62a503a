// RaceChecker: conflicting task pairs from region overlaps, and the per-start check.
#include "runtime/cpu/race_check.h"

#include <algorithm>
#include <string>

#include "ir/error.h"
#include "ir/ops/linear.h"
#include "runtime/cpu/memory_budget.h"
#include "runtime/cpu/task_kernels.h"

namespace mpk {
namespace {

struct Access {
  TaskId task;
  const Region* region;
  bool write;
};

}  // namespace

RaceChecker::RaceChecker(const Module& m) {
  const auto& tasks = m.graph.tasks;
  conflicts_.resize(tasks.size());
  // Position in sequential order within one step: (operator, phase).
  const std::vector<int> phase = task_phases(m);
  auto rank_of = [&](TaskId t) { return 4 * static_cast<int64_t>(tasks[t].op) + phase[t]; };
  std::vector<std::vector<Access>> by_tensor(m.program.tensors.size());
  for (TaskId t = 0; t < static_cast<TaskId>(tasks.size()); ++t) {
    for (const Region& r : tasks[t].reads) by_tensor.at(r.tensor).push_back({t, &r, false});
    for (const Region& r : tasks[t].writes) by_tensor.at(r.tensor).push_back({t, &r, true});
  }
  // Conflict lists grow with the square of a tensor's accesses: keep them in the budget.
  const int64_t max_pairs = host_memory_budget() / static_cast<int64_t>(2 * sizeof(Conflict));
  int64_t pairs = 0;
  for (const std::vector<Access>& acc : by_tensor) {
    for (size_t i = 0; i < acc.size(); ++i) {
      if (!acc[i].write) continue;
      for (size_t j = 0; j < acc.size(); ++j) {
        if (j == i || (acc[j].write && j < i)) continue;  // each write pair once
        const TaskId a = acc[i].task, b = acc[j].task;
        const int64_t ra = rank_of(a), rb = rank_of(b);
        // Shares of one cooperative operator write whichever units they claim: they
        // conflict across steps, never within one.
        const bool peers = ra == rb && coop_share(tasks[a]).cooperative() && coop_share(tasks[b]).cooperative();
        if (a == b || (ra == rb && !peers) || !acc[i].region->overlaps(*acc[j].region)) continue;
        if (++pairs > max_pairs)
          check_host_memory(pairs * static_cast<int64_t>(2 * sizeof(Conflict)),
                            "the race checker's conflicting task pairs (tensor '" +
                                m.program.tensors[acc[i].region->tensor].name + "' has " +
                                std::to_string(acc.size()) + " accesses)");
        conflicts_[a].push_back({b, peers ? kPeer : rb < ra ? 1 : 0});
        conflicts_[b].push_back({a, peers ? kPeer : ra < rb ? 1 : 0});
      }
    }
  }
  for (auto& c : conflicts_) {
    std::sort(c.begin(), c.end(), [](const Conflict& x, const Conflict& y) { return x.other < y.other; });
    c.erase(std::unique(c.begin(), c.end(),
                        [](const Conflict& x, const Conflict& y) { return x.other == y.other; }),
            c.end());
  }
}

void RaceChecker::check(const Module& m, TaskId task, int64_t step,
                        const std::vector<std::atomic<int64_t>>& done) const {
  for (const Conflict& c : conflicts_[task]) {
    const int64_t have = done[c.other].load(std::memory_order_acquire);
    if (c.ahead == kPeer ? have == step || have == step + 1 : have == step + c.ahead) continue;
    const std::string want = c.ahead == kPeer ? std::to_string(step) + " or " + std::to_string(step + 1)
                                              : "exactly " + std::to_string(step + c.ahead);
    throw Error("race: " + describe_task(m, task) + " started step " + std::to_string(step) +
                " when " + describe_task(m, c.other) + " had completed " + std::to_string(have) +
                " steps; sequential order needs " + want + " (a missing or wrong event)");
  }
}

size_t RaceChecker::num_pairs() const {
  size_t n = 0;
  for (const auto& c : conflicts_) n += c.size();
  return n / 2;
}

}  // namespace mpk
