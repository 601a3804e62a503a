// The discrete-event simulator. Bandwidth sharing uses virtual service time: every
// task in its streaming phase advances at the same per-SM rate, so a task's finish is
// fixed in "bytes served per SM" and one heap orders all streaming tasks; a change in
// the number of busy SMs only changes how fast that virtual clock runs. The shares of a
// cooperative operator draw from one pool of bytes per step, as the GPU's SMs claim its
// units: the pool drains at the rate of every share streaming from it, and each of them
// ends when it is empty, so a worker holding two shares does not stream twice. From step
// 1 on each share first streams the unit it holds: the GPU's claim loop ends with a claim
// of the next step's units, kept for it.
#include "traces/simulator.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <queue>
#include <string>
#include <unordered_map>

#include "ir/checked.h"
#include "ir/error.h"
#include "ir/ops/linear.h"
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
  int32_t worker;    // -1: the cooperative pool `pool` runs dry
  uint32_t version;  // stale when the worker's flow (or the pool's drain) changed since
  int64_t pool = -1;
  bool operator>(const Streaming& o) const {
    return finish != o.finish ? finish > o.finish : seq > o.seq;
  }
};

// A worker's one flow of bytes at a time: its weight stream (the streamed bytes of the
// task it works on, or of the next task that streams, fetched ahead while the worker is
// free, up to the ring's size before that task starts) or the task's direct reads and
// writes.
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
  std::vector<size_t> next_streaming;  // per list position: the next that streams (list size: none)
  size_t target_pos = 0;    // the task the weight stream fetches for: list position and step
  int32_t target_step = -1;
  double streamed = 0;      // stream bytes of the target fetched so far
  double drawn = 0;         // bytes the target, a cooperative share, drew so far
  double held = 0;          // bytes of the unit the target share holds still to stream
  bool held_flow = false;   // the flow streams the held unit
  int64_t pool = -1;        // the cooperative pool its flow draws from
  bool streams_for(size_t p, int32_t k) const { return target_step == k && target_pos == p; }
  bool busy() const { return executing || flow != Flow::kNone; }
};

// One cooperative operator's bytes at one step, drained by the shares streaming from it.
struct CoopPool {
  double left = 0;        // bytes not yet drawn, as of served0
  double served0 = 0;     // served_ when `left` was settled
  int32_t flowing = 0;    // shares drawing now
  int32_t ended = 0;      // shares of the step that ended
  uint32_t version = 0;   // of its heap entry
  std::vector<int32_t> members;
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
    std::vector<int32_t> coop_of_op(m.program.ops.size(), -1);
    for (const Task& t : m.graph.tasks) {
      costs_.push_back(task_cost(c, m, t));
      int32_t coop = -1;
      if (coop_share(t).cooperative()) {
        int32_t& k = coop_of_op[static_cast<size_t>(t.op)];
        if (k < 0) {
          k = static_cast<int32_t>(coop_bytes_.size());
          coop_bytes_.push_back(0);
          coop_shares_.push_back(0);
          coop_units_.push_back(0);
        }
        coop = k;
        coop_bytes_[static_cast<size_t>(k)] += costs_.back().stream_bytes + costs_.back().direct_bytes;
        ++coop_shares_[static_cast<size_t>(k)];
        const Operator& op = m.program.ops[static_cast<size_t>(t.op)];
        if (!op.outputs.empty() && !m.program.tensor(op.outputs[0]).shape.empty())  // (hand-built graphs have none)
          coop_units_[static_cast<size_t>(k)] = coop_share(t).units(m.program.tensor(op.outputs[0]).shape.back());
      }
      coop_.push_back(coop);
    }
    latency_.resize(m.graph.events.size());
    for (EventId e = 0; e < graph_.num_events(); ++e)
      latency_[e] = c.event_latency_ns +
                    c.fanout_ns * static_cast<double>(std::max<size_t>(graph_.consumers(e).size(), 1) - 1) +
                    (m.graph.events[e].all_ranks ? c.link_latency_ns : 0);
    const auto& lists = m.graph.schedule.workers;
    workers_.resize(lists.size());
    for (size_t w = 0; w < lists.size(); ++w) {
      Worker& wk = workers_[w];
      wk.list = &lists[w];
      const size_t n = lists[w].size();
      wk.next_streaming.assign(n + 1, n);
      for (size_t i = n; i-- > 0;)
        wk.next_streaming[i] = costs_[static_cast<size_t>(lists[w][i])].stream_bytes > 0 ? i : wk.next_streaming[i + 1];
    }
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
      while (!streaming_.empty() && stale(streaming_.top())) streaming_.pop();
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
        if (s.worker >= 0) flow_done(s.worker);
        else pool_dry(s.pool);
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

  bool stale(const Streaming& s) const {
    if (s.worker >= 0) return s.version != workers_[s.worker].flow_version;
    const auto it = pools_.find(s.pool);
    return it == pools_.end() || it->second.version != s.version;
  }

  // The pool of task `id`'s operator at `step` (-1: not a cooperative share).
  int64_t pool_key(TaskId id, int32_t step) const {
    const int32_t k = coop_[static_cast<size_t>(id)];
    return k < 0 ? -1 : static_cast<int64_t>(step) * static_cast<int64_t>(coop_bytes_.size()) + k;
  }

  CoopPool& pool(int64_t key) {
    auto [it, fresh] = pools_.try_emplace(key);
    if (fresh) {  // the op's bytes, less the units its shares hold from the step before
      const auto n = static_cast<int64_t>(coop_bytes_.size());
      const size_t k = static_cast<size_t>(key % n);
      const double held = key / n >= 1 ? coop_shares_[k] * unit_bytes(k) : 0.0;
      it->second.left = std::max(0.0, coop_bytes_[k] - held);
      it->second.served0 = served_;
    }
    return it->second;
  }

  // Brings `left` up to now.
  void settle(CoopPool& p) {
    p.left = std::max(0.0, p.left - p.flowing * (served_ - p.served0));
    p.served0 = served_;
  }

  // Posts when the pool runs dry at the current rate (after its count changed).
  void post(CoopPool& p, int64_t key) {
    ++p.version;
    if (p.flowing > 0) streaming_.push({served_ + p.left / p.flowing, seq_++, -1, p.version, key});
  }

  double unit_bytes(size_t k) const {
    return coop_units_[k] > 0 ? coop_bytes_[k] / static_cast<double>(coop_units_[k]) : 0.0;
  }

  // A share's next bytes, at most `cap`: the unit it holds, then its operator's pool.
  // False when both are empty.
  bool draw_share(int32_t w, Flow f, double cap, int64_t key) {
    Worker& wk = workers_[w];
    if (wk.held > 0) {
      begin_flow(w, f, std::min(cap, wk.held), -1);
      wk.held_flow = true;
      return true;
    }
    if (pool_empty(key)) return false;
    begin_flow(w, f, cap, key);
    return true;
  }

  bool pool_empty(int64_t key) {
    CoopPool& p = pool(key);
    settle(p);
    return p.left <= 1e-9;
  }

  void pool_dry(int64_t key) {
    CoopPool& p = pools_.at(key);
    p.left = 0;
    p.served0 = served_;
    const std::vector<int32_t> members = p.members;
    for (int32_t w : members) flow_done(w);
  }

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

  // A flow of `bytes`; with a pool key (a cooperative share), of at most `bytes`, drawn
  // from the pool.
  void begin_flow(int32_t w, Flow f, double bytes, int64_t key) {
    Worker& wk = workers_[w];
    update(wk, [&] {
      wk.flow = f;
      ++wk.flow_version;
      wk.flow_served0 = served_;
    });
    if (bytes < std::numeric_limits<double>::infinity())
      streaming_.push({served_ + bytes, seq_++, w, wk.flow_version});
    if (key < 0) return;
    CoopPool& p = pool(key);
    wk.pool = key;
    p.members.push_back(w);
    settle(p);
    ++p.flowing;
    post(p, key);
  }

  void stop_flow(Worker& wk) {
    if (wk.flow == Flow::kStream) wk.streamed += served_ - wk.flow_served0;
    if (wk.held_flow) {  // (less than a byte left is none: served_'s rounding)
      wk.held = wk.held - (served_ - wk.flow_served0) < 1.0 ? 0.0 : wk.held - (served_ - wk.flow_served0);
      wk.drawn += served_ - wk.flow_served0;
      wk.held_flow = false;
    }
    if (wk.pool >= 0) {
      CoopPool& p = pools_.at(wk.pool);
      settle(p);
      wk.drawn += served_ - wk.flow_served0;
      const int32_t w = static_cast<int32_t>(&wk - workers_.data());
      p.members.erase(std::find(p.members.begin(), p.members.end(), w));
      --p.flowing;
      post(p, wk.pool);
      wk.pool = -1;
    }
    update(wk, [&] {
      wk.flow = Flow::kNone;
      ++wk.flow_version;
    });
  }

  // The worker is free at `now_`: its weight stream fetches ahead for this task, or for
  // the next one that streams (a task without weights does not hold it back: the GPU's
  // stream thread walks past it), up to the ring's size; a cooperative share claims from
  // its pool. Then the task waits for its events from wait_begin.
  void next_task(int32_t w, double wait_begin) {
    Worker& wk = workers_[w];
    wk.wait_begin = wait_begin;
    const size_t n = wk.list->size();
    size_t pos = wk.next_streaming[wk.pos];
    int32_t step = wk.step;
    if (pos == n) pos = wk.next_streaming[0], ++step;
    if (pos < n && step < steps_) {
      const TaskId t = (*wk.list)[pos];
      const int64_t key = pool_key(t, step);
      if (!wk.streams_for(pos, step)) {
        wk.target_pos = pos;
        wk.target_step = step;
        wk.streamed = wk.drawn = 0;
        wk.held = key >= 0 && step >= 1 ? unit_bytes(static_cast<size_t>(coop_[static_cast<size_t>(t)])) : 0.0;
      }
      const double ahead = std::min(costs_[t].stream_bytes, c_.prefetch_bytes) - wk.streamed;
      if (ahead > 1e-9) {
        if (key >= 0) draw_share(w, Flow::kStream, ahead, key);
        else begin_flow(w, Flow::kStream, ahead, -1);
      }
    }
    if (!wk.streams_for(wk.pos, wk.step)) {  // a share that streams nothing ahead (no ring)
      const int32_t k = coop_[static_cast<size_t>(task_of(wk))];
      wk.drawn = 0;
      wk.held = k >= 0 && wk.step >= 1 ? unit_bytes(static_cast<size_t>(k)) : 0.0;
    }
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
    if (wk.flow == Flow::kStream) stop_flow(wk);  // a task that streams nothing pauses the stream ahead
    if (!wk.streams_for(wk.pos, wk.step)) return after_stream(w);
    if (const int64_t key = pool_key(task_of(wk), wk.step); key >= 0) {  // a share streams until its pool is empty
      if (!draw_share(w, Flow::kStream, std::numeric_limits<double>::infinity(), key)) after_stream(w);
      return;
    }
    const double left = c.stream_bytes - wk.streamed;
    if (left > 1e-9) begin_flow(w, Flow::kStream, left, -1);  // the rest of the stream first
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
    const Worker& wk = workers_[w];
    const TaskCost& c = costs_[task_of(wk)];
    const double bytes = c.direct_bytes_at(wk.step);
    if (const int64_t key = pool_key(task_of(wk), wk.step); key >= 0) {  // the pool holds them
      if (!(bytes > 0 && draw_share(w, Flow::kDirect, std::numeric_limits<double>::infinity(), key))) body_done(w);
      return;
    }
    if (bytes > 0) begin_flow(w, Flow::kDirect, bytes, -1);
    else body_done(w);
  }

  void flow_done(int32_t w) {
    Worker& wk = workers_[w];
    const Flow f = wk.flow;
    const bool held = wk.held_flow;
    stop_flow(wk);
    if (!wk.executing) return;  // the ring is full; the rest streams once the task starts
    if (const int64_t key = pool_key(task_of(wk), wk.step);  // after its held unit, a share draws from the pool
        held && key >= 0 && draw_share(w, f, std::numeric_limits<double>::infinity(), key))
      return;
    if (f == Flow::kStream) after_stream(w);
    else body_done(w);
  }

  void body_done(int32_t w) {
    const Worker& wk = workers_[w];
    const TaskCost& c = costs_[task_of(wk)];
    double compute = c.compute_ns_at(wk.step);
    if (const int32_t k = coop_[static_cast<size_t>(task_of(wk))]; k >= 0) {  // the arithmetic of the units it drew
      const double even = coop_bytes_[static_cast<size_t>(k)] / coop_shares_[static_cast<size_t>(k)];
      compute *= even > 0 ? wk.drawn / even : 0.0;
    }
    const double end_t = std::max(now_, wk.start + c.fixed_ns + compute);
    if (end_t > now_) push(end_t, w, Kind::kEnd);
    else end(w);
  }

  void end(int32_t w) {
    Worker& wk = workers_[w];
    update(wk, [&] { wk.executing = false; });
    const TaskId id = task_of(wk);
    if (wk.streams_for(wk.pos, wk.step)) wk.target_step = -1;
    if (const int64_t key = pool_key(id, wk.step); key >= 0) {
      const int32_t k = coop_[static_cast<size_t>(id)];
      if (++pool(key).ended == coop_shares_[static_cast<size_t>(k)]) pools_.erase(key);
    }
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
  std::vector<int32_t> coop_;          // per task: its cooperative operator, or -1
  std::vector<double> coop_bytes_;     // per cooperative operator: the bytes of all its shares
  std::vector<int32_t> coop_shares_;   // per cooperative operator: its shares
  std::vector<int64_t> coop_units_;    // per cooperative operator: its units
  std::unordered_map<int64_t, CoopPool> pools_;  // by pool_key
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
