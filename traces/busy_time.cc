// Busy time as a union of intervals (traces/busy_time.h).
#include "traces/busy_time.h"

#include <algorithm>
#include <tuple>

namespace mpk {
namespace {

// Adds to the union of one worker's intervals, taken in start order.
struct UnionWalk {
  int64_t covered_to = 0;
  int64_t add(const Execution& e, bool first_of_worker) {
    if (first_of_worker) covered_to = e.start_ns;
    const int64_t added = std::max<int64_t>(0, e.end_ns - std::max(e.start_ns, covered_to));
    covered_to = std::max(covered_to, e.end_ns);
    return added;
  }
};

}  // namespace

std::vector<int64_t> busy_union_prefix(const std::vector<Execution>& ordered) {
  std::vector<int64_t> p(ordered.size() + 1, 0);
  UnionWalk walk;
  for (size_t i = 0; i < ordered.size(); ++i)
    p[i + 1] = p[i] + walk.add(ordered[i], i == 0 || ordered[i].worker != ordered[i - 1].worker);
  return p;
}

namespace {

bool by_worker_and_start(const Execution& a, const Execution& b) {
  return std::tie(a.worker, a.start_ns) < std::tie(b.worker, b.start_ns);
}

}  // namespace

int64_t busy_union_ns(const std::vector<Execution>& execs) {
  if (std::is_sorted(execs.begin(), execs.end(), by_worker_and_start))  // as stored and read
    return busy_union_prefix(execs).back();
  std::vector<Execution> ordered = execs;
  std::sort(ordered.begin(), ordered.end(), by_worker_and_start);
  return busy_union_prefix(ordered).back();
}

std::vector<int64_t> busy_union_per_step(const std::vector<Execution>& execs, int32_t num_steps) {
  // By (step, worker, start): from executions by (worker, start), as stored and read, a
  // stable pass by step gives it in linear time.
  std::vector<const Execution*> ordered;
  ordered.reserve(execs.size());
  if (std::is_sorted(execs.begin(), execs.end(), by_worker_and_start)) {
    std::vector<size_t> at(static_cast<size_t>(std::max(num_steps, 0)) + 1, 0);
    for (const Execution& e : execs)
      if (e.step >= 0 && e.step < num_steps) ++at[static_cast<size_t>(e.step) + 1];
    for (size_t k = 1; k < at.size(); ++k) at[k] += at[k - 1];
    ordered.resize(at.back());
    for (const Execution& e : execs)
      if (e.step >= 0 && e.step < num_steps) ordered[at[static_cast<size_t>(e.step)]++] = &e;
  } else {
    for (const Execution& e : execs)
      if (e.step >= 0 && e.step < num_steps) ordered.push_back(&e);
    std::sort(ordered.begin(), ordered.end(), [](const Execution* a, const Execution* b) {
      return std::tie(a->step, a->worker, a->start_ns) < std::tie(b->step, b->worker, b->start_ns);
    });
  }
  std::vector<int64_t> busy(static_cast<size_t>(std::max(num_steps, 0)), 0);
  UnionWalk walk;
  for (size_t i = 0; i < ordered.size(); ++i) {
    const Execution& e = *ordered[i];
    const bool first = i == 0 || e.step != ordered[i - 1]->step || e.worker != ordered[i - 1]->worker;
    busy[static_cast<size_t>(e.step)] += walk.add(e, first);
  }
  return busy;
}

}  // namespace mpk
