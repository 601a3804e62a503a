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

#include "ir/error.h"

namespace mpk {
namespace {

enum class Kind : uint8_t { kStart, kStreamBegin, kEnd };

struct Timed {
  double t;
  uint64_t seq;
  int32_t worker;
  Kind kind;
  bool operator>(const Timed& o) const { return t != o.t ? t > o.t : seq > o.seq; }
};

struct Streaming {
  double finish;  // in virtual service (bytes per SM)
  uint64_t seq;
  int32_t worker;
  bool operator>(const Streaming& o) const {
    return finish != o.finish ? finish > o.finish : seq > o.seq;
  }
};

struct TaskCost {
  double fixed_ns, bytes, compute_ns;
};

struct Worker {
  const std::vector<TaskId>* list = nullptr;
  int32_t step = 0;
  size_t pos = 0;
  bool done = false;
  int32_t pending = 0;  // events not yet at their target
  double wait_begin = 0, start = 0;
};

struct Waiter {
  int32_t worker;
  int64_t need;
};

class Simulation {
 public:
  Simulation(const Module& m, const CostParams& c, int32_t steps)
      : m_(m), c_(c), steps_(steps), releases_(m.graph.events.size()),
        waiters_(m.graph.events.size()) {
    for (const Task& t : m.graph.tasks) {
      const KindCost k = c.cost_of(t.kind);
      const double compute = k.flops_per_ns > 0 ? static_cast<double>(t.flops) / k.flops_per_ns : 0;
      costs_.push_back({k.fixed_ns, static_cast<double>(t.bytes) * k.bytes_scale, compute});
    }
    // The events are the truth; a hand-built module's use lists may be stale.
    waits_.resize(m.graph.tasks.size());
    triggers_.resize(m.graph.tasks.size());
    for (size_t e = 0; e < m.graph.events.size(); ++e) {
      for (TaskId p : m.graph.events[e].producers) triggers_.at(p).push_back(static_cast<EventId>(e));
      for (TaskId c : m.graph.events[e].consumers) waits_.at(c).push_back(static_cast<EventId>(e));
    }
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
      wk.wait_begin = 0;
      try_start(static_cast<int32_t>(w));
    }
    const double inf = std::numeric_limits<double>::infinity();
    while (true) {
      double t_stream = inf;
      if (!streaming_.empty())
        t_stream = now_ + std::max(0.0, (streaming_.top().finish - served_) / rate());
      const double t_timed = timed_.empty() ? inf : timed_.top().t;
      if (t_stream == inf && t_timed == inf) break;
      if (t_stream < t_timed) {
        const Streaming s = streaming_.top();
        streaming_.pop();
        advance(t_stream);
        stream_done(s.worker);
      } else {
        const Timed e = timed_.top();
        timed_.pop();
        advance(e.t);
        if (e.kind == Kind::kStart) start(e.worker);
        else if (e.kind == Kind::kStreamBegin) stream_begin(e.worker);
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

  void push(double t, int32_t w, Kind k) { timed_.push({t, seq_++, w, k}); }

  TaskId task_of(const Worker& wk) const { return (*wk.list)[wk.pos]; }

  int64_t need_of(const Event& e, int32_t step) const {
    return e.target * (static_cast<int64_t>(step) + 1 - e.step_distance);
  }

  void try_start(int32_t w) {
    Worker& wk = workers_[w];
    wk.pending = 0;
    for (EventId e : waits_[task_of(wk)]) {
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
    for (EventId e : waits_[task_of(wk)]) {
      const int64_t need = need_of(m_.graph.events[e], wk.step);
      if (need > 0) ready = std::max(ready, releases_[e][need - 1] + c_.event_latency_ns);
    }
    push(ready, w, Kind::kStart);
  }

  void start(int32_t w) {
    Worker& wk = workers_[w];
    wk.start = now_;
    ++busy_;
    const TaskCost& c = costs_[task_of(wk)];
    if (c.fixed_ns > 0) push(now_ + c.fixed_ns, w, Kind::kStreamBegin);
    else stream_begin(w);
  }

  void stream_begin(int32_t w) {
    const TaskCost& c = costs_[task_of(workers_[w])];
    if (c.bytes > 0) streaming_.push({served_ + c.bytes, seq_++, w});
    else stream_done(w);
  }

  void stream_done(int32_t w) {
    const Worker& wk = workers_[w];
    const TaskCost& c = costs_[task_of(wk)];
    const double end_t = std::max(now_, wk.start + c.fixed_ns + c.compute_ns);
    if (end_t > now_) push(end_t, w, Kind::kEnd);
    else end(w);
  }

  void end(int32_t w) {
    Worker& wk = workers_[w];
    --busy_;
    const TaskId id = task_of(wk);
    execs_.push_back({id, wk.step, w, w, std::llround(wk.wait_begin), std::llround(wk.start),
                      std::llround(now_)});
    for (EventId e : triggers_[id]) release(e);
    if (++wk.pos == wk.list->size()) {
      wk.pos = 0;
      if (++wk.step == steps_) {
        wk.done = true;
        return;
      }
    }
    wk.wait_begin = now_ + c_.dispatch_ns;
    try_start(w);
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
    for (EventId e : waits_[id]) {
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
  std::vector<TaskCost> costs_;
  std::vector<std::vector<EventId>> waits_, triggers_;
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
                                int32_t steps) {
  if (scheduled.graph.schedule.empty())
    throw Error("simulator: module '" + scheduled.name + "' has no schedule (run assign-sm)");
  if (costs.mem_bandwidth <= 0 || costs.sm_bandwidth <= 0)
    throw Error("simulator: memory bandwidths must be > 0");
  Simulation sim(scheduled, costs, steps);
  return sim.run();
}

}  // namespace mpk
