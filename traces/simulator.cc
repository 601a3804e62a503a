// The discrete-event simulator. Bandwidth sharing uses virtual service time: every
// task in its streaming phase advances at the same per-SM rate, so a task's finish is
// fixed in "bytes served per SM" and one heap orders all streaming tasks; a change in
// the number of busy SMs only changes how fast that virtual clock runs.
#include "traces/simulator.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <queue>
#include <string>

#include "ir/checked.h"
#include "ir/error.h"
#include "ir/task_graph_index.h"
#include "traces/trace_limits.h"

namespace mpk {
namespace {

enum class Kind : uint8_t { kStart, kDirectBegin, kEnd, kRelease };

struct Timed {
  double t;
  uint64_t seq;
  int32_t worker;  // kRelease: the event
  Kind kind;
  bool operator>(const Timed& o) const { return t != o.t ? t > o.t : seq > o.seq; }
};

struct Streaming {
  double finish;  // in virtual service (bytes per SM)
  uint64_t seq;
  int32_t worker;
  uint32_t version;  // stale when the worker's flow changed since
  bool operator>(const Streaming& o) const {
    return finish != o.finish ? finish > o.finish : seq > o.seq;
  }
};

// A worker's one flow of bytes at a time: its weight stream (the task's streamed
// bytes, fetched ahead from the moment the previous task ended, up to the ring's
// size before the task starts) or the task's direct reads and writes.
enum class Flow : uint8_t { kNone, kStream, kDirect };

struct Worker {
  const std::vector<TaskId>* list = nullptr;
  int32_t step = 0;
  size_t pos = 0;
  bool done = false;
  int32_t pending = 0;  // events not yet at their target
  double wait_begin = 0, start = 0;
  bool executing = false;
  Flow flow = Flow::kNone;
  uint32_t flow_version = 0;
  double flow_served0 = 0;  // served_ when the flow began
  double streamed = 0;      // stream bytes of the current task fetched so far
  bool busy() const { return executing || flow != Flow::kNone; }
};

struct Waiter {
  int32_t worker;
  int64_t need;
};

class Simulation {
 public:
  Simulation(const Module& m, const CostParams& c, int32_t steps)
      : m_(m), c_(c), steps_(steps), graph_(m.graph), releases_(m.graph.events.size()),
        waiters_(m.graph.events.size()) {
    graph_.require_valid();
    for (const Task& t : m.graph.tasks) costs_.push_back(task_cost(c, m, t));
    latency_.resize(m.graph.events.size());
    for (EventId e = 0; e < graph_.num_events(); ++e)
      latency_[e] = c.event_latency_ns +
                    c.fanout_ns * static_cast<double>(std::max<size_t>(graph_.consumers(e).size(), 1) - 1);
    const auto& lists = m.graph.schedule.workers;
    workers_.resize(lists.size());
    for (size_t w = 0; w < lists.size(); ++w) workers_[w].list = &lists[w];
  }

  std::vector<Execution> run() {
    for (size_t w = 0; w < workers_.size(); ++w) {
      Worker& wk = workers_[w];
      if (wk.list->empty() || steps_ <= 0) {
        wk.done = true;
        continue;
      }
      next_task(static_cast<int32_t>(w), 0);
    }
    const double inf = std::numeric_limits<double>::infinity();
    while (true) {
      while (!streaming_.empty() &&
             streaming_.top().version != workers_[streaming_.top().worker].flow_version)
        streaming_.pop();
      double t_stream = inf;
      if (!streaming_.empty())
        t_stream = now_ + std::max(0.0, (streaming_.top().finish - served_) / rate());
      const double t_timed = timed_.empty() ? inf : timed_.top().t;
      if (t_stream == inf && t_timed == inf) break;
      if (std::min(t_stream, t_timed) > static_cast<double>(kMaxTraceNs)) too_long();
      if (t_stream < t_timed) {
        const Streaming s = streaming_.top();
        streaming_.pop();
        advance(t_stream);
        flow_done(s.worker);
      } else {
        const Timed e = timed_.top();
        timed_.pop();
        advance(e.t);
        if (e.kind == Kind::kStart) start(e.worker);
        else if (e.kind == Kind::kDirectBegin) direct_begin(e.worker);
        else if (e.kind == Kind::kRelease) release(e.worker);
        else end(e.worker);
      }
    }
    for (size_t w = 0; w < workers_.size(); ++w)
      if (!workers_[w].done) deadlock(static_cast<int32_t>(w));
    return std::move(execs_);
  }

 private:
  double rate() const { return shared_rate(c_, busy_); }

  void advance(double t) {
    if (t > now_) {
      if (busy_ > 0) served_ += rate() * (t - now_);
      now_ = t;
    }
  }

  void push(double t, int32_t w, Kind k) {
    if (!(t <= static_cast<double>(kMaxTraceNs))) too_long();  // also NaN
    timed_.push({t, seq_++, w, k});
  }

  // Times past kMaxTraceNs (days) come from cost settings, not from a real schedule.
  [[noreturn]] void too_long() const {
    throw Error("simulator: the run lasts longer than " + std::to_string(kMaxTraceNs) +
                " ns (about 13 days) by step " + std::to_string(min_step()) +
                ": the cost settings make tasks far too slow (check mem_bandwidth, "
                "sm_bandwidth, fixed_ns, bytes_scale, flops_per_ns)");
  }

  int32_t min_step() const {
    int32_t k = steps_;
    for (const Worker& wk : workers_)
      if (!wk.done) k = std::min(k, wk.step);
    return k;
  }

  TaskId task_of(const Worker& wk) const { return (*wk.list)[wk.pos]; }

  int64_t need_of(const Event& e, int32_t step) const {
    return e.target * (static_cast<int64_t>(step) + 1 - e.step_distance);
  }

  // Changes a worker's state, keeping the count of busy SMs (executing or streaming).
  template <class F>
  void update(Worker& wk, F change) {
    const bool was = wk.busy();
    change();
    busy_ += static_cast<int64_t>(wk.busy()) - static_cast<int64_t>(was);
  }

  void begin_flow(int32_t w, Flow f, double bytes) {
    Worker& wk = workers_[w];
    update(wk, [&] {
      wk.flow = f;
      ++wk.flow_version;
      wk.flow_served0 = served_;
    });
    streaming_.push({served_ + bytes, seq_++, w, wk.flow_version});
  }

  void stop_flow(Worker& wk) {
    if (wk.flow == Flow::kStream) wk.streamed += served_ - wk.flow_served0;
    update(wk, [&] {
      wk.flow = Flow::kNone;
      ++wk.flow_version;
    });
  }

  // The worker is free at `now_`: its weight stream moves on to the next task's bytes
  // (up to the ring's size), and the task waits for its events from wait_begin.
  void next_task(int32_t w, double wait_begin) {
    Worker& wk = workers_[w];
    wk.wait_begin = wait_begin;
    wk.streamed = 0;
    const TaskCost& c = costs_[task_of(wk)];
    if (c.stream_bytes > 0) begin_flow(w, Flow::kStream, std::min(c.stream_bytes, c_.prefetch_bytes));
    wk.pending = 0;
    for (EventId e : graph_.waits(task_of(wk))) {
      const int64_t need = need_of(m_.graph.events[e], wk.step);
      if (need > 0 && static_cast<int64_t>(releases_[e].size()) < need) {
        waiters_[e].push_back({w, need});
        ++wk.pending;
      }
    }
    if (wk.pending == 0) schedule_start(w);
  }

  void schedule_start(int32_t w) {
    Worker& wk = workers_[w];
    double ready = wk.wait_begin;
    for (EventId e : graph_.waits(task_of(wk))) {
      const int64_t need = need_of(m_.graph.events[e], wk.step);
      if (need > 0) ready = std::max(ready, releases_[e][need - 1] + latency_[e]);
    }
    push(ready, w, Kind::kStart);
  }

  void start(int32_t w) {
    Worker& wk = workers_[w];
    wk.start = now_;
    update(wk, [&] { wk.executing = true; });
    const TaskCost& c = costs_[task_of(wk)];
    if (wk.flow == Flow::kStream) stop_flow(wk);
    const double left = c.stream_bytes - wk.streamed;
    if (left > 1e-9) begin_flow(w, Flow::kStream, left);  // the rest of the stream first
    else after_stream(w);
  }

  // The task's streamed bytes are in: its direct bytes follow its fixed time.
  void after_stream(int32_t w) {
    const Worker& wk = workers_[w];
    const double at = wk.start + costs_[task_of(wk)].fixed_ns;
    if (at > now_) push(at, w, Kind::kDirectBegin);
    else direct_begin(w);
  }

  void direct_begin(int32_t w) {
    const TaskCost& c = costs_[task_of(workers_[w])];
    const double bytes = c.direct_bytes_at(workers_[w].step);
    if (bytes > 0) begin_flow(w, Flow::kDirect, bytes);
    else body_done(w);
  }

  void flow_done(int32_t w) {
    Worker& wk = workers_[w];
    const Flow f = wk.flow;
    stop_flow(wk);
    if (!wk.executing) return;  // the ring is full; the rest streams once the task starts
    if (f == Flow::kStream) after_stream(w);
    else body_done(w);
  }

  void body_done(int32_t w) {
    const Worker& wk = workers_[w];
    const TaskCost& c = costs_[task_of(wk)];
    const double end_t = std::max(now_, wk.start + c.fixed_ns + c.compute_ns_at(wk.step));
    if (end_t > now_) push(end_t, w, Kind::kEnd);
    else end(w);
  }

  void end(int32_t w) {
    Worker& wk = workers_[w];
    update(wk, [&] { wk.executing = false; });
    const TaskId id = task_of(wk);
    execs_.push_back({id, wk.step, w, w, std::llround(wk.wait_begin), std::llround(wk.start),
                      std::llround(now_)});
    // The n-th event is released (n - 1) * trigger_ns after the end.
    double at = now_;
    for (EventId e : graph_.triggers(id)) {
      if (at > now_) push(at, e, Kind::kRelease);
      else release(e);
      at += c_.trigger_ns;
    }
    double gap = c_.dispatch_ns;
    if (++wk.pos == wk.list->size()) {
      wk.pos = 0;
      gap += c_.step_ns;
      if (++wk.step == steps_) {
        wk.done = true;
        return;
      }
    }
    next_task(w, now_ + gap);
  }

  void release(EventId e) {
    releases_[e].push_back(now_);
    const int64_t count = static_cast<int64_t>(releases_[e].size());
    auto& ws = waiters_[e];
    for (size_t i = 0; i < ws.size();) {
      if (ws[i].need > count) {
        ++i;
        continue;
      }
      const int32_t w = ws[i].worker;
      ws[i] = ws.back();
      ws.pop_back();
      if (--workers_[w].pending == 0) schedule_start(w);
    }
  }

  [[noreturn]] void deadlock(int32_t w) const {
    const Worker& wk = workers_[w];
    const TaskId id = task_of(wk);
    std::string msg = "simulator: deadlock: worker " + std::to_string(w) + " waits forever for task " +
                      std::to_string(id) + " at step " + std::to_string(wk.step);
    for (EventId e : graph_.waits(id)) {
      const int64_t need = need_of(m_.graph.events[e], wk.step);
      const int64_t have = static_cast<int64_t>(releases_[e].size());
      if (need > have) {
        msg += " (event " + std::to_string(e) + " reached " + std::to_string(have) + " of " +
               std::to_string(need) + ")";
        break;
      }
    }
    throw Error(msg);
  }

  const Module& m_;
  const CostParams& c_;
  const int32_t steps_;
  const TaskGraphIndex graph_;
  std::vector<TaskCost> costs_;
  std::vector<double> latency_;  // per event: release -> visible
  std::vector<Worker> workers_;
  std::vector<std::vector<double>> releases_;  // per event: time of each increment
  std::vector<std::vector<Waiter>> waiters_;
  std::priority_queue<Timed, std::vector<Timed>, std::greater<Timed>> timed_;
  std::priority_queue<Streaming, std::vector<Streaming>, std::greater<Streaming>> streaming_;
  std::vector<Execution> execs_;
  double now_ = 0, served_ = 0;
  int64_t busy_ = 0;
  uint64_t seq_ = 0;
};

}  // namespace

std::vector<Execution> simulate(const Module& scheduled, const CostParams& costs,
                                int64_t steps) {
  if (scheduled.graph.schedule.empty())
    throw Error("simulator: module '" + scheduled.name + "' has no schedule (run assign-sm)");
  check_cost_params(costs, "simulator: cost parameters");
  checked_range(steps, 0, kMaxSteps, "simulator: steps");
  Simulation sim(scheduled, costs, static_cast<int32_t>(steps));
  return sim.run();
}

}  // namespace mpk
