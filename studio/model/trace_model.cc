// TraceModel: loads one run into sorted arrays and answers the panels' queries.
#include "studio/model/trace_model.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <climits>
#include <cmath>
#include <tuple>

#include "ir/error.h"
#include "studio/model/gallop.h"
#include "traces/busy_time.h"

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
  // Above batch 1 the tasks' regions say which batch rows each serves (attention tasks
  // serve blocks of rows); the graph rows carry no regions, the stored module does (the
  // reader checked that it matches them).
  if (attr_int_or(graph_.attrs, "batch", 1) > 1)
    if (std::optional<Module> stored = reader.stored_module(run); stored && stored->graph.tasks.size() == graph_.graph.tasks.size())
      for (size_t t = 0; t < graph_.graph.tasks.size(); ++t) {
        graph_.graph.tasks[t].reads = std::move(stored->graph.tasks[t].reads);
        graph_.graph.tasks[t].writes = std::move(stored->graph.tasks[t].writes);
      }
  execs_ = reader.executions(run);
  bubbles_ = reader.bubbles(run);
  steps_ = reader.steps(run);

  // The reader checked every row against the run's graph (traces/trace_rows.h): workers,
  // tasks, operators and steps are in range.
  const int32_t workers = run_.num_workers;
  if (execs_.size() > static_cast<size_t>(INT32_MAX))
    throw Error("run " + std::to_string(run) + ": too many executions to show (" +
                std::to_string(execs_.size()) + ")");
  // Ordered by (worker, start, end, step, task): a linear group's members are adjacent.
  const auto exec_order = [](const Execution& a, const Execution& b) {
    return std::tie(a.worker, a.start_ns, a.end_ns, a.step, a.task) <
           std::tie(b.worker, b.start_ns, b.end_ns, b.step, b.task);
  };
  if (!std::is_sorted(execs_.begin(), execs_.end(), exec_order)) std::sort(execs_.begin(), execs_.end(), exec_order);
  const auto by_worker_start = [](const Bubble& a, const Bubble& b) {
    return a.worker != b.worker ? a.worker < b.worker : a.start_ns < b.start_ns;
  };
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
  for (const Task& t : graph_.graph.tasks) {
    kinds_.push_back(graph_.program.ops[static_cast<size_t>(t.op)].kind);
    task_bytes_.push_back(t.bytes);
  }

  busy_prefix_ = busy_union_prefix(execs_);
  cover_end_.resize(execs_.size());
  for (size_t i = 0; i < execs_.size(); ++i)
    cover_end_[i] = i > 0 && execs_[i - 1].worker == execs_[i].worker ? std::max(cover_end_[i - 1], execs_[i].end_ns)
                                                                      : execs_[i].end_ns;
  picture_ = CoarsePicture(execs_, worker_begin_, bubbles_, bubble_begin_, graph_.graph.tasks, kinds_,
                           run_.duration_ns);

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
  return best_dist <= slack_ns ? group_of(best).begin : -1;
}

IndexRange TraceModel::group_of(int64_t exec) const {
  const Execution& x = execution(exec);
  const auto same = [&](int64_t i) {
    const Execution& y = execs_[static_cast<size_t>(i)];
    return y.worker == x.worker && y.start_ns == x.start_ns && y.end_ns == x.end_ns && y.step == x.step;
  };
  IndexRange r{exec, exec + 1};
  while (r.begin > 0 && same(r.begin - 1)) --r.begin;
  while (r.end < static_cast<int64_t>(execs_.size()) && same(r.end)) ++r.end;
  return r;
}

double TraceModel::busy_before(int32_t worker, double t, int64_t* hint) const {
  const IndexRange r = worker_range(worker);
  if (r.empty()) return 0;
  const int64_t from = hint && *hint >= r.begin && *hint <= r.end ? *hint : r.begin;
  // k: the first execution starting at or after t; those before it started before t.
  const int64_t k = hint ? gallop(execs_, from, r.end, t, [](const Execution& e) { return e.start_ns; })
                         : std::lower_bound(execs_.begin() + r.begin, execs_.begin() + r.end, t,
                                            [](const Execution& e, double v) { return static_cast<double>(e.start_ns) < v; }) -
                               execs_.begin();
  if (hint) *hint = k;
  if (k == r.begin) return 0;
  // The union of executions r.begin..k-1, less its part after t: every one of them that
  // reaches past t covers [t, its end), so that part is [t, the latest end).
  const double union_ns = static_cast<double>(busy_prefix_[static_cast<size_t>(k)] - busy_prefix_[static_cast<size_t>(r.begin)]);
  return union_ns - std::max(0.0, static_cast<double>(cover_end_[static_cast<size_t>(k - 1)]) - t);
}

int64_t TraceModel::busy_ns(int32_t worker, int64_t t0, int64_t t1) const {
  if (t1 <= t0) return 0;
  return std::llround(busy_before(worker, static_cast<double>(t1)) - busy_before(worker, static_cast<double>(t0)));
}

SpanSummary TraceModel::summarize(int32_t worker, double t0, double t1, SpanCursor* cursor) const {
  SpanSummary s;
  const IndexRange r = worker_range(worker);
  if (r.empty() || t1 <= t0) return s;
  SpanCursor local;
  SpanCursor& c = cursor ? *cursor : local;
  if (c.exec < r.begin || c.exec > r.end) c = SpanCursor{r.begin, 0, -1, 0};
  const double before = c.t == t0 ? c.busy_before : busy_before(worker, t0, &c.exec);
  // The last execution starting at or before the middle, unless it ended before it and
  // the next one starts within the span.
  const double mid = 0.5 * (t0 + t1);
  int64_t i = gallop(execs_, c.exec, r.end, std::nextafter(mid, 1e300), [](const Execution& e) { return e.start_ns; });
  if (i > r.begin) --i;
  if (static_cast<double>(execs_[static_cast<size_t>(i)].end_ns) < mid && i + 1 < r.end &&
      static_cast<double>(execs_[static_cast<size_t>(i + 1)].start_ns) < t1)
    ++i;
  const Execution& x = execs_[static_cast<size_t>(i)];
  if (static_cast<double>(x.end_ns) > t0 && static_cast<double>(x.start_ns) < t1) {
    s.exec = i;
    s.kind = static_cast<int>(kinds_[static_cast<size_t>(x.task)]);
  }
  c.busy_before = busy_before(worker, t1, &c.exec);
  c.t = t1;
  s.busy_ns = c.busy_before - before;
  // Idle causes from the bubbles in the span: from the first one ending after t0 (a
  // worker's bubbles never overlap, so their ends increase too).
  std::array<double, 4> idle{};
  const std::span<const Bubble> bs = bubbles(worker);
  const std::vector<Bubble>& all = bubbles_;
  const int64_t base = bubble_begin_[static_cast<size_t>(worker)];
  const int64_t from = base + std::clamp<int64_t>(c.bubble, 0, static_cast<int64_t>(bs.size()));
  int64_t k = gallop(all, from, base + static_cast<int64_t>(bs.size()), std::nextafter(t0, 1e300),
                     [](const Bubble& b) { return b.end_ns; });
  c.bubble = k - base;
  for (; k < base + static_cast<int64_t>(bs.size()) && static_cast<double>(all[static_cast<size_t>(k)].start_ns) < t1; ++k) {
    const Bubble& b = all[static_cast<size_t>(k)];
    const double w = std::min(t1, static_cast<double>(b.end_ns)) - std::max(t0, static_cast<double>(b.start_ns));
    if (w > 0) idle[static_cast<size_t>(b.cause) % 4] += w;
  }
  const auto top = std::max_element(idle.begin(), idle.end());
  if (*top > 0) s.cause = static_cast<int>(top - idle.begin());
  return s;
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

std::string TraceModel::group_name(int64_t exec) const {
  const IndexRange g = group_of(exec);
  const Operator& op = op_of(execution(exec).task);
  if (g.size() == 1) return op.name;
  // The walker's joined names without layers, the layer said once.
  const std::string names = walker_->name_of(walker_->node_of(g.begin), true);
  return op.layer >= 0 ? "L" + std::to_string(op.layer) + "." + names : names;
}

std::string TraceModel::label(int64_t exec) const {
  const IndexRange g = group_of(exec);
  const Execution& x = execution(exec);
  if (g.size() == 1) return op_of(x.task).name + " [task " + std::to_string(x.task) + "]";
  std::string s = std::to_string(g.size()) + " tasks: " + group_name(exec) + " [tasks ";
  for (int64_t i = g.begin; i < g.end; ++i)
    s += (i > g.begin ? ", " : "") + std::to_string(execution(i).task);
  return s + "]";
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
