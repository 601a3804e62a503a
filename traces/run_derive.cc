// Validation, step spans, bubble causes and operator statistics of one run.
#include "traces/run_derive.h"

#include <algorithm>
#include <limits>
#include <string>

#include "ir/error.h"
#include "traces/busy_time.h"
#include "traces/trace_limits.h"

namespace mpk {

std::vector<SchedulePlace> schedule_places(const Module& m) {
  std::vector<SchedulePlace> places(m.graph.tasks.size());
  const auto& workers = m.graph.schedule.workers;
  for (size_t w = 0; w < workers.size(); ++w) {
    for (size_t i = 0; i < workers[w].size(); ++i) {
      TaskId t = workers[w][i];
      if (t < 0 || static_cast<size_t>(t) >= places.size())
        throw Error("schedule of worker " + std::to_string(w) + " names unknown task " +
                    std::to_string(t));
      places[t] = {static_cast<int32_t>(w), static_cast<int32_t>(i)};
    }
  }
  return places;
}

namespace {

std::string describe(const Execution& x) {
  return "execution of task " + std::to_string(x.task) + " at step " + std::to_string(x.step) +
         " on worker " + std::to_string(x.worker);
}

}  // namespace

int64_t validate_and_normalize(const Module& m, std::vector<Execution>& execs,
                               int32_t num_steps) {
  if (m.graph.schedule.empty()) throw Error("trace: the module has no schedule");
  const std::vector<SchedulePlace> places = schedule_places(m);
  const size_t num_tasks = m.graph.tasks.size();
  std::vector<uint8_t> seen(num_tasks * static_cast<size_t>(std::max(num_steps, 0)), 0);
  int64_t origin = std::numeric_limits<int64_t>::max();
  for (const Execution& x : execs) {
    if (x.task < 0 || static_cast<size_t>(x.task) >= num_tasks)
      throw Error("trace: " + describe(x) + ": no such task");
    if (x.step < 0 || x.step >= num_steps)
      throw Error("trace: " + describe(x) + ": step outside 0.." + std::to_string(num_steps - 1));
    if (x.worker != places[x.task].worker)
      throw Error("trace: " + describe(x) + ": the schedule puts the task on worker " +
                  std::to_string(places[x.task].worker));
    if (!(x.wait_begin_ns <= x.start_ns && x.start_ns <= x.end_ns))
      throw Error("trace: " + describe(x) + ": times out of order (wait_begin " +
                  std::to_string(x.wait_begin_ns) + ", start " + std::to_string(x.start_ns) +
                  ", end " + std::to_string(x.end_ns) + ")");
    uint8_t& s = seen[static_cast<size_t>(x.task) * num_steps + x.step];
    if (s) throw Error("trace: " + describe(x) + ": recorded twice");
    s = 1;
    origin = std::min(origin, x.wait_begin_ns);
  }
  if (execs.empty()) return 0;
  for (const Execution& x : execs)  // end >= origin: the unsigned difference is exact
    if (static_cast<uint64_t>(x.end_ns) - static_cast<uint64_t>(origin) > static_cast<uint64_t>(kMaxTraceNs))
      throw Error("trace: " + describe(x) + ": ends more than " + std::to_string(kMaxTraceNs) +
                  " ns (about 13 days) after the run's first wait");
  for (Execution& x : execs) {
    x.wait_begin_ns -= origin;
    x.start_ns -= origin;
    x.end_ns -= origin;
  }
  return origin;
}

ExecutionIndex::ExecutionIndex(size_t num_tasks, int32_t num_steps,
                               const std::vector<Execution>& execs)
    : num_steps_(num_steps), slots_(num_tasks * static_cast<size_t>(num_steps), -1) {
  for (size_t i = 0; i < execs.size(); ++i)
    slots_[static_cast<size_t>(execs[i].task) * num_steps + execs[i].step] =
        static_cast<int64_t>(i);
}

BlameIndex::BlameIndex(const Module& m, const std::vector<Execution>& execs, int32_t num_steps)
    : m_(m), execs_(execs), num_steps_(num_steps), index_(m.graph.tasks.size(), num_steps, execs),
      graph_(m.graph), last_(m.graph.events.size() * static_cast<size_t>(std::max(num_steps, 0)), -1) {
  graph_.require_valid();
  for (size_t e = 0; e < m.graph.events.size(); ++e)
    for (int32_t k = 0; k < num_steps; ++k) {
      int64_t& best = last_[e * num_steps + k];
      for (TaskId p : graph_.producers(static_cast<EventId>(e))) {
        const int64_t i = index_.find(p, k);
        if (i >= 0 && (best < 0 || execs[i].end_ns > execs[best].end_ns)) best = i;
      }
    }
}

Blame BlameIndex::blame(const Execution& x) const {
  Blame best;
  for (EventId e : graph_.waits(x.task)) {
    const int32_t step = x.step - graph_.distance(e);
    if (step < 0 || step >= num_steps_) continue;
    const int64_t i = last_[static_cast<size_t>(e) * num_steps_ + step];
    if (i < 0) continue;
    const Execution& px = execs_[i];
    if (best.event < 0 || px.end_ns > best.producer_end_ns)
      best = {e, px.task, px.worker, px.end_ns, i};
  }
  return best;
}

namespace {

struct StepMarks {
  std::vector<int64_t> end;         // end of each step's last execution
  std::vector<int64_t> last_start;  // latest start among each step's executions
};

// Emits the queue-empty and step-tail pieces of [t, limit) for a worker that finished
// its step-j work; advances t.
void close_step(const StepMarks& marks, int32_t worker, int32_t j, int64_t limit, int64_t& t,
                std::vector<Bubble>& out) {
  auto piece = [&](int64_t until, BubbleCause cause) {
    until = std::min(until, limit);
    if (until <= t) return;
    Bubble b;
    b.worker = worker;
    b.start_ns = t;
    b.end_ns = until;
    b.cause = cause;
    b.step = j;
    out.push_back(b);
    t = until;
  };
  piece(marks.last_start[j], BubbleCause::kQueueEmpty);
  piece(marks.end[j], BubbleCause::kStepTail);
}

}  // namespace

RunExtent run_extent(const Module& m, const std::vector<Execution>& execs) {
  RunExtent e;
  e.num_workers = static_cast<int32_t>(m.graph.schedule.workers.size());
  for (const Execution& x : execs) {
    e.duration_ns = std::max(e.duration_ns, x.end_ns);
    e.max_task_ns = std::max(e.max_task_ns, x.end_ns - x.start_ns);
  }
  return e;
}

DerivedRun derive_run(const Module& m, const std::vector<Execution>& execs, int32_t num_steps) {
  DerivedRun d;
  d.num_steps = num_steps;
  const RunExtent extent = run_extent(m, execs);
  d.num_workers = extent.num_workers;
  d.max_task_ns = extent.max_task_ns;
  const std::vector<SchedulePlace> places = schedule_places(m);
  const BlameIndex blames(m, execs, num_steps);

  // Step spans.
  StepMarks marks;
  marks.end.assign(num_steps, 0);
  marks.last_start.assign(num_steps, 0);
  const std::vector<int64_t> busy = busy_union_per_step(execs, num_steps);
  std::vector<bool> any(num_steps, false);
  for (const Execution& x : execs) {
    marks.end[x.step] = any[x.step] ? std::max(marks.end[x.step], x.end_ns) : x.end_ns;
    marks.last_start[x.step] =
        any[x.step] ? std::max(marks.last_start[x.step], x.start_ns) : x.start_ns;
    any[x.step] = true;
  }
  for (int32_t k = 0; k < num_steps; ++k) {
    const int64_t prev = k > 0 ? marks.end[k - 1] : 0;
    if (!any[k]) marks.end[k] = marks.last_start[k] = prev;
    marks.end[k] = std::max(marks.end[k], prev);
    d.steps.push_back({k, prev, marks.end[k], busy[k]});
  }
  d.duration_ns = extent.duration_ns;  // the steps' last end

  // Per-worker timelines in schedule order.
  std::vector<std::vector<int64_t>> per_worker(d.num_workers);
  for (size_t i = 0; i < execs.size(); ++i) per_worker[execs[i].worker].push_back(i);
  for (int32_t w = 0; w < d.num_workers; ++w) {
    auto& list = per_worker[w];
    auto in_schedule_order = [&](int64_t a, int64_t b) {
      const Execution& x = execs[a];
      const Execution& y = execs[b];
      if (x.step != y.step) return x.step < y.step;
      return places[x.task].position < places[y.task].position;
    };
    if (!std::is_sorted(list.begin(), list.end(), in_schedule_order))  // a worker runs its list in order
      std::sort(list.begin(), list.end(), in_schedule_order);
    int64_t t = 0;
    int32_t cur_step = -1;  // step of the worker's previous execution
    for (int64_t i : list) {
      const Execution& x = execs[i];
      for (int32_t j = std::max(cur_step, 0); j < x.step; ++j)
        close_step(marks, w, j, x.start_ns, t, d.bubbles);
      cur_step = x.step;
      if (x.start_ns > t) {
        const Blame blame = blames.blame(x);
        Bubble b;
        b.worker = w;
        b.start_ns = t;
        b.end_ns = x.start_ns;
        b.step = x.step;
        b.task = x.task;
        const bool waited =
            blame.event >= 0 && (x.start_ns > x.wait_begin_ns || blame.producer_end_ns >= t);
        if (waited) {
          b.cause = BubbleCause::kWait;
          b.event = blame.event;
          b.producer = blame.producer;
          b.producer_worker = blame.producer_worker;
        } else {
          b.cause = BubbleCause::kOverhead;
        }
        d.bubbles.push_back(b);
      }
      t = std::max(t, x.end_ns);
    }
    for (int32_t j = std::max(cur_step, 0); j < num_steps; ++j)
      close_step(marks, w, j, d.duration_ns, t, d.bubbles);
  }

  // Operator statistics.
  std::vector<OperatorStat> ops(m.program.ops.size());
  for (const Execution& x : execs) {
    OpId op = m.graph.tasks[x.task].op;
    if (op < 0 || static_cast<size_t>(op) >= ops.size()) continue;
    OperatorStat& s = ops[op];
    s.executions++;
    s.total_ns += x.end_ns - x.start_ns;
    s.max_ns = std::max(s.max_ns, x.end_ns - x.start_ns);
    s.wait_ns += x.start_ns - x.wait_begin_ns;
  }
  for (size_t i = 0; i < ops.size(); ++i) {
    if (!ops[i].executions) continue;
    OperatorStat s = ops[i];
    s.op = static_cast<OpId>(i);
    s.name = m.program.ops[i].name;
    s.kind = std::string(name_of(m.program.ops[i].kind));
    s.layer = m.program.ops[i].layer;
    d.op_stats.push_back(std::move(s));
  }
  return d;
}

}  // namespace mpk
