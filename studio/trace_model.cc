// TraceModel: loads one run into sorted arrays and answers the panels' queries.
#include "studio/trace_model.h"

#include <algorithm>
#include <chrono>

namespace mpk::studio {
namespace {

// Offsets [w] .. [w + 1] of each worker's items in an array ordered by worker.
template <typename T>
std::vector<int64_t> worker_offsets(const std::vector<T>& items, int32_t num_workers) {
  std::vector<int64_t> begin(static_cast<size_t>(num_workers) + 1, 0);
  for (const T& x : items) begin[static_cast<size_t>(x.worker) + 1]++;
  for (size_t w = 1; w < begin.size(); ++w) begin[w] += begin[w - 1];
  return begin;
}

}  // namespace

TraceModel::TraceModel(const TraceReader& reader, int64_t run) {
  const auto t0 = std::chrono::steady_clock::now();
  run_ = reader.run(run);
  graph_ = reader.load_graph(run);
  execs_ = reader.executions(run);
  bubbles_ = reader.bubbles(run);
  steps_ = reader.steps(run);

  // The reader checked every row against the run's graph (traces/trace_rows.h): workers,
  // tasks, operators and steps are in range.
  const int32_t workers = run_.num_workers;
  // The reader orders by (worker, start) already; the model relies on it, so make sure.
  const auto by_worker_start = [](const auto& a, const auto& b) {
    return a.worker != b.worker ? a.worker < b.worker : a.start_ns < b.start_ns;
  };
  if (!std::is_sorted(execs_.begin(), execs_.end(), by_worker_start))
    std::sort(execs_.begin(), execs_.end(), by_worker_start);
  if (!std::is_sorted(bubbles_.begin(), bubbles_.end(), by_worker_start))
    std::sort(bubbles_.begin(), bubbles_.end(), by_worker_start);
  worker_begin_ = worker_offsets(execs_, workers);
  bubble_begin_ = worker_offsets(bubbles_, workers);

  wide_.resize(static_cast<size_t>(workers));
  for (int32_t w = 0; w < workers; ++w) {
    const std::span<const Bubble> bs = bubbles(w);
    auto& levels = wide_[static_cast<size_t>(w)];
    for (size_t i = 0; i < bs.size(); ++i) {
      const int64_t d = bs[i].end_ns - bs[i].start_ns;
      for (int l = 0; d >= (int64_t{1} << (l + kLodBase)); ++l) {
        if (levels.size() <= static_cast<size_t>(l)) levels.emplace_back();
        levels[static_cast<size_t>(l)].push_back(static_cast<int32_t>(i));
      }
    }
  }

  kinds_.reserve(graph_.graph.tasks.size());
  for (const Task& t : graph_.graph.tasks) kinds_.push_back(graph_.program.ops[static_cast<size_t>(t.op)].kind);

  // The coarse picture: walk each worker's executions once, cell by cell.
  cell_ns_ = std::max(1.0, static_cast<double>(run_.duration_ns) / kKindCells);
  cells_.assign(static_cast<size_t>(workers) * kKindCells, -1);
  for (int32_t w = 0; w < workers; ++w) {
    const IndexRange r = worker_range(w);
    int64_t i = r.begin;
    for (int32_t c = 0; c < kKindCells && i < r.end; ++c) {
      const double c0 = c * cell_ns_, mid = c0 + 0.5 * cell_ns_, c1 = c0 + cell_ns_;
      while (i < r.end && static_cast<double>(execs_[static_cast<size_t>(i)].end_ns) <= mid) ++i;
      if (i == r.end) break;
      const Execution& x = execs_[static_cast<size_t>(i)];
      // x is the first task ending after the middle: it covers the middle, or it starts
      // after it (then it counts if it starts within the cell).
      int64_t pick = -1;
      if (static_cast<double>(x.start_ns) <= mid) {
        pick = i;
      } else if (i > r.begin && static_cast<double>(execs_[static_cast<size_t>(i - 1)].end_ns) > c0) {
        pick = i - 1;
      } else if (static_cast<double>(x.start_ns) < c1) {
        pick = i;
      }
      if (pick >= 0)
        cells_[static_cast<size_t>(w) * kKindCells + static_cast<size_t>(c)] =
            static_cast<int8_t>(kinds_[static_cast<size_t>(execs_[static_cast<size_t>(pick)].task)]);
    }
  }

  walker_ = std::make_unique<CriticalPathWalker>(graph_, execs_,
                                                 std::max<int32_t>(static_cast<int32_t>(run_.steps), 1));
  load_seconds_ =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

TraceModel::~TraceModel() = default;

IndexRange TraceModel::worker_range(int32_t worker) const {
  if (worker < 0 || worker >= num_workers()) return {};
  return {worker_begin_[static_cast<size_t>(worker)],
          worker_begin_[static_cast<size_t>(worker) + 1]};
}

int32_t TraceModel::sm_of(int32_t worker) const {
  const IndexRange r = worker_range(worker);
  return r.begin < r.end ? execs_[static_cast<size_t>(r.begin)].sm : -1;
}

std::string TraceModel::row_label(int32_t worker) const {
  const int32_t sm = sm_of(worker);
  return "w" + std::to_string(worker) + (sm >= 0 ? " SM " + std::to_string(sm) : "");
}

IndexRange TraceModel::executions_in(int32_t worker, int64_t t0, int64_t t1) const {
  const IndexRange r = worker_range(worker);
  if (r.empty() || t1 <= t0) return {r.begin, r.begin};
  const auto first = execs_.begin() + r.begin;
  const auto last = execs_.begin() + r.end;
  // An execution overlapping [t0, t1) started at or after t0 - max_task_ns.
  auto lo = std::lower_bound(first, last, t0 - run_.max_task_ns,
                             [](const Execution& x, int64_t t) { return x.start_ns < t; });
  while (lo != last && lo->end_ns <= t0) ++lo;
  const auto hi = std::lower_bound(lo, last, t1,
                                   [](const Execution& x, int64_t t) { return x.start_ns < t; });
  return {lo - execs_.begin(), hi - execs_.begin()};
}

int64_t TraceModel::execution_at(int32_t worker, int64_t t, int64_t slack_ns) const {
  const IndexRange r = worker_range(worker);
  if (r.empty()) return -1;
  const auto first = execs_.begin() + r.begin;
  const auto last = execs_.begin() + r.end;
  // The first execution starting after t; the one before it is the candidate cover.
  const auto after = std::upper_bound(first, last, t,
                                      [](int64_t v, const Execution& x) { return v < x.start_ns; });
  int64_t best = -1;
  int64_t best_dist = slack_ns + 1;
  if (after != first) {
    const auto before = after - 1;
    const int64_t d = t < before->end_ns ? 0 : t - before->end_ns;
    if (d < best_dist) best = before - execs_.begin(), best_dist = d;
  }
  if (after != last) {
    const int64_t d = after->start_ns - t;
    if (d < best_dist) best = after - execs_.begin(), best_dist = d;
  }
  return best_dist <= slack_ns ? best : -1;
}

int TraceModel::kind_cell(int32_t worker, double t) const {
  if (worker < 0 || worker >= num_workers() || t < 0) return -1;
  const auto c = static_cast<int64_t>(t / cell_ns_);
  if (c >= kKindCells) return -1;
  return cells_[static_cast<size_t>(worker) * kKindCells + static_cast<size_t>(c)];
}

std::span<const Bubble> TraceModel::bubbles(int32_t worker) const {
  if (worker < 0 || worker >= num_workers()) return {};
  const auto b = static_cast<size_t>(bubble_begin_[static_cast<size_t>(worker)]);
  const auto e = static_cast<size_t>(bubble_begin_[static_cast<size_t>(worker) + 1]);
  return std::span<const Bubble>(bubbles_.data() + b, e - b);
}

IndexRange TraceModel::bubbles_in(int32_t worker, int64_t t0, int64_t t1) const {
  const std::span<const Bubble> bs = bubbles(worker);
  if (bs.empty() || t1 <= t0) return {};
  // Bubbles of a worker never overlap: only the last one starting at or before t0 can
  // reach into the window from the left.
  auto lo = std::upper_bound(bs.begin(), bs.end(), t0,
                             [](int64_t v, const Bubble& b) { return v < b.start_ns; });
  if (lo != bs.begin() && (lo - 1)->end_ns > t0) --lo;
  const auto hi = std::lower_bound(lo, bs.end(), t1,
                                   [](const Bubble& b, int64_t v) { return b.start_ns < v; });
  return {lo - bs.begin(), hi - bs.begin()};
}

const Bubble* TraceModel::bubble_at(int32_t worker, int64_t t) const {
  const std::span<const Bubble> bs = bubbles(worker);
  auto it = std::upper_bound(bs.begin(), bs.end(), t,
                             [](int64_t v, const Bubble& b) { return v < b.start_ns; });
  if (it == bs.begin()) return nullptr;
  --it;
  return t < it->end_ns ? &*it : nullptr;
}

void TraceModel::wide_bubbles(int32_t worker, int64_t t0, int64_t t1, int64_t min_ns,
                              std::vector<int64_t>& out) const {
  const std::span<const Bubble> bs = bubbles(worker);
  if (bs.empty() || t1 <= t0) return;
  if (min_ns < (int64_t{2} << kLodBase)) {
    const IndexRange r = bubbles_in(worker, t0, t1);
    for (int64_t i = r.begin; i < r.end; ++i) {
      const Bubble& b = bs[static_cast<size_t>(i)];
      if (2 * (b.end_ns - b.start_ns) >= min_ns) out.push_back(i);
    }
    return;
  }
  int l = 0;
  while ((int64_t{2} << (l + kLodBase)) <= min_ns) ++l;  // 2^(l + base) <= min_ns < 2^(l + base + 1)
  const auto& levels = wide_[static_cast<size_t>(worker)];
  if (static_cast<size_t>(l) >= levels.size()) return;
  const std::vector<int32_t>& level = levels[static_cast<size_t>(l)];
  auto lo = std::upper_bound(level.begin(), level.end(), t0,
                             [&](int64_t v, int32_t i) { return v < bs[static_cast<size_t>(i)].start_ns; });
  if (lo != level.begin() && bs[static_cast<size_t>(*(lo - 1))].end_ns > t0) --lo;
  for (auto it = lo; it != level.end() && bs[static_cast<size_t>(*it)].start_ns < t1; ++it)
    out.push_back(*it);
}

const Operator& TraceModel::op_of(TaskId t) const {
  return graph_.program.ops[static_cast<size_t>(task(t).op)];
}

std::string TraceModel::label(int64_t exec) const {
  const Execution& x = execution(exec);
  return op_of(x.task).name + " [task " + std::to_string(x.task) + "]";
}

std::vector<DepLink> TraceModel::producers(int64_t exec) const {
  const Execution& x = execution(exec);
  std::vector<DepLink> out;
  const TaskGraphIndex& g = walker_->blames().graph();
  for (EventId e : g.waits(x.task)) {
    const int32_t step = x.step - g.distance(e);
    for (TaskId p : g.producers(e)) out.push_back({step >= 0 ? find(p, step) : -1, p, step, e, g.distance(e)});
  }
  return out;
}

std::vector<DepLink> TraceModel::consumers(int64_t exec) const {
  const Execution& x = execution(exec);
  std::vector<DepLink> out;
  const TaskGraphIndex& g = walker_->blames().graph();
  for (EventId e : g.triggers(x.task)) {
    const int32_t step = x.step + g.distance(e);
    for (TaskId c : g.consumers(e)) out.push_back({find(c, step), c, step, e, g.distance(e)});
  }
  return out;
}

int64_t TraceModel::previous_on_worker(int64_t exec) const {
  if (exec <= 0) return -1;
  return execs_[static_cast<size_t>(exec - 1)].worker == execution(exec).worker ? exec - 1 : -1;
}

}  // namespace mpk::studio
