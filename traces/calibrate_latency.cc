// Event latency (with its trigger and fan-out growth), dispatch and step gaps from the
// executions of recorded runs.
#include "traces/calibrate_latency.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "traces/run_derive.h"

namespace mpk {
namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  return *mid;
}

// Solves the k x k system a * x = b (Gaussian elimination, partial pivoting); false when
// it is singular.
bool solve(std::vector<double> a, std::vector<double> b, size_t k, std::vector<double>& x) {
  for (size_t c = 0; c < k; ++c) {
    size_t p = c;
    for (size_t r = c + 1; r < k; ++r)
      if (std::fabs(a[r * k + c]) > std::fabs(a[p * k + c])) p = r;
    if (std::fabs(a[p * k + c]) < 1e-12) return false;
    for (size_t j = 0; j < k; ++j) std::swap(a[c * k + j], a[p * k + j]);
    std::swap(b[c], b[p]);
    for (size_t r = 0; r < k; ++r) {
      if (r == c) continue;
      const double f = a[r * k + c] / a[c * k + c];
      for (size_t j = 0; j < k; ++j) a[r * k + j] -= f * a[c * k + j];
      b[r] -= f * b[c];
    }
  }
  x.resize(k);
  for (size_t c = 0; c < k; ++c) x[c] = b[c] / a[c * k + c];
  return true;
}

// One wait: start - producer end, the producer's trigger index, the event's consumers - 1.
struct Wait {
  double y, trigger, fanout;
};

// A task's start against the worker: start - the worker's previous end, and whether it
// opens a step.
struct Gap {
  double gap;          // start - previous end on the worker
  double ready_after;  // estimated event readiness - previous end (<= 0: not event-bound)
  double wait_gap;     // wait_begin - previous end
  bool step_start;
};

// A rank's view of its launch's all_ranks events: the last end, over every rank, of the
// producers of such an event at a step (empty for a run without peers).
class CrossRankEnds {
 public:
  CrossRankEnds(const CalibrationRun& run, const TaskGraphIndex& g) : g_(g), steps_(run.steps) {
    if (run.peers.empty()) return;
    end_.assign(run.module.graph.tasks.size() * static_cast<size_t>(steps_), -1);
    for (const auto* list : {&run.executions, &run.peers})
      for (const Execution& x : *list)
        if (x.task >= 0 && static_cast<size_t>(x.task) < run.module.graph.tasks.size() && x.step >= 0 && x.step < steps_) {
          int64_t& e = end_[static_cast<size_t>(x.task) * steps_ + x.step];
          e = std::max(e, x.end_ns);
        }
  }
  // The last end of the all_ranks events `x` waited on, -1 for none.
  int64_t last_end(const Module& m, const Execution& x) const {
    int64_t last = -1;
    if (end_.empty()) return last;
    for (EventId e : g_.waits(x.task)) {
      const int32_t k = x.step - g_.distance(e);
      if (!m.graph.events[static_cast<size_t>(e)].all_ranks || k < 0) continue;
      for (TaskId t : g_.producers(e)) last = std::max(last, end_[static_cast<size_t>(t) * steps_ + k]);
    }
    return last;
  }

 private:
  const TaskGraphIndex& g_;
  int32_t steps_;
  std::vector<int64_t> end_;
};

// The waits and gaps of one run, the readiness estimated with `p`'s latency terms; the
// waits an all_ranks event decided go to `link` (start - the last end over every rank).
void observe(const CalibrationRun& run, const CostParams& p, std::vector<Wait>& waits, std::vector<double>& link,
             std::vector<Gap>& gaps, bool event_bound_only, double worker_gap) {
  const auto& execs = run.executions;
  const BlameIndex blames(run.module, execs, run.steps);
  const TaskGraphIndex& g = blames.graph();
  const CrossRankEnds cross(run, g);
  std::vector<std::vector<size_t>> per_worker(run.module.graph.schedule.workers.size());
  for (size_t i = 0; i < execs.size(); ++i)
    if (execs[i].worker >= 0 && static_cast<size_t>(execs[i].worker) < per_worker.size())
      per_worker[static_cast<size_t>(execs[i].worker)].push_back(i);
  for (auto& list : per_worker) {
    std::sort(list.begin(), list.end(), [&](size_t a, size_t b) {
      return execs[a].start_ns < execs[b].start_ns;
    });
    for (size_t j = 0; j < list.size(); ++j) {
      const Execution& e = execs[list[j]];
      const Blame b = blames.blame(e);
      double trigger = 0, fanout = 0;
      if (b.event >= 0) {
        const auto trig = g.triggers(b.producer);
        trigger = static_cast<double>(std::lower_bound(trig.begin(), trig.end(), b.event) - trig.begin());
        fanout = static_cast<double>(std::max<size_t>(g.consumers(b.event).size(), 1) - 1);
      }
      const double start = static_cast<double>(e.start_ns);
      const double prev_end = j > 0 ? static_cast<double>(execs[list[j - 1]].end_ns) : 0.0;
      const bool step_start = j > 0 && execs[list[j - 1]].step != e.step;
      const double latency = p.event_latency_ns + p.trigger_ns * trigger + p.fanout_ns * fanout;
      const int64_t link_end = cross.last_end(run.module, e);
      // An all_ranks event that ended with the last local one decides: its release is later.
      const bool by_link = link_end >= 0 && (b.event < 0 || link_end >= b.producer_end_ns);
      const double ready = by_link       ? static_cast<double>(link_end) + p.event_latency_ns + p.link_latency_ns
                           : b.event >= 0 ? static_cast<double>(b.producer_end_ns) + latency
                                          : 0.0;
      if (j > 0)
        gaps.push_back({start - prev_end, ready - prev_end,
                        static_cast<double>(e.wait_begin_ns) - prev_end, step_start});
      // A wait the event decided: the task started after the worker was free.
      const double free_at = j > 0 ? prev_end + (event_bound_only ? worker_gap : 0.0) : 0.0;
      if (!(e.start_ns > e.wait_begin_ns && start > free_at + 0.5)) continue;
      if (by_link) {
        if (e.start_ns >= link_end) link.push_back(start - static_cast<double>(link_end));
      } else if (b.event >= 0 && e.start_ns >= b.producer_end_ns) {
        waits.push_back({start - static_cast<double>(b.producer_end_ns), trigger, fanout});
      }
    }
  }
}

// Least absolute deviations over the waits with the given growth terms: {base, trigger,
// fanout} (a term not used is 0) and the mean absolute residual.
std::pair<std::vector<double>, double> fit_waits(const std::vector<Wait>& w, bool trigger,
                                                 bool fanout) {
  const size_t k = 1 + trigger + fanout;
  std::vector<double> x, y;
  x.reserve(w.size() * k);
  for (const Wait& s : w) {
    x.push_back(1);
    if (trigger) x.push_back(s.trigger);
    if (fanout) x.push_back(s.fanout);
    y.push_back(s.y);
  }
  const std::vector<double> c = fit_l1(x, y, k);
  std::vector<double> out = {c[0], trigger ? c[1] : 0.0, fanout ? c[k - 1] : 0.0};
  double loss = 0;
  for (const Wait& s : w) loss += std::fabs(s.y - out[0] - out[1] * s.trigger - out[2] * s.fanout);
  return {out, w.empty() ? 0 : loss / static_cast<double>(w.size())};
}

// The best of the four models (growth terms on or off): a term stays only where it cuts
// the mean absolute residual by at least 1 ns and 0.5 %.
std::vector<double> fit_latency(const std::vector<Wait>& w) {
  bool any_trigger = false, any_fanout = false;
  for (const Wait& s : w) any_trigger |= s.trigger > 0, any_fanout |= s.fanout > 0;
  auto [best, loss] = fit_waits(w, false, false);
  for (const auto& [t, f] : {std::pair{true, false}, std::pair{false, true}, std::pair{true, true}}) {
    if ((t && !any_trigger) || (f && !any_fanout)) continue;
    const auto [c, l] = fit_waits(w, t, f);
    if (l < loss - std::max(1.0, 0.005 * loss)) best = c, loss = l;
  }
  return best;
}

// At most `n` evenly spaced elements.
template <class T>
std::vector<T> thin(const std::vector<T>& v, size_t n) {
  if (v.size() <= n) return v;
  std::vector<T> out;
  const double stride = static_cast<double>(v.size()) / static_cast<double>(n);
  for (size_t i = 0; i < n; ++i) out.push_back(v[static_cast<size_t>(static_cast<double>(i) * stride)]);
  return out;
}

}  // namespace

std::vector<double> fit_l1(const std::vector<double>& x, const std::vector<double>& y,
                           size_t columns) {
  const size_t n = y.size();
  std::vector<double> coef(columns, 0.0);
  if (n == 0) return coef;
  std::vector<double> w(n, 1.0);
  std::vector<size_t> active(columns);
  std::iota(active.begin(), active.end(), 0);
  for (int iter = 0; iter < 40; ++iter) {
    const size_t k = active.size();
    std::vector<double> a(k * k, 0.0), b(k, 0.0), sol;
    for (size_t i = 0; i < n; ++i)
      for (size_t r = 0; r < k; ++r) {
        const double xr = x[i * columns + active[r]];
        b[r] += w[i] * xr * y[i];
        for (size_t c = 0; c < k; ++c) a[r * k + c] += w[i] * xr * x[i * columns + active[c]];
      }
    if (!solve(a, b, k, sol)) {
      if (k == 1) break;
      active.pop_back();  // a constant regressor: the intercept explains it
      continue;
    }
    // A growth term below zero has no physical meaning: drop it and refit.
    size_t negative = k;
    for (size_t r = 1; r < k; ++r)
      if (sol[r] < 0) negative = r;
    if (negative < k) {
      active.erase(active.begin() + static_cast<std::ptrdiff_t>(negative));
      continue;
    }
    std::fill(coef.begin(), coef.end(), 0.0);
    for (size_t r = 0; r < k; ++r) coef[active[r]] = sol[r];
    double scale = 0;
    for (size_t i = 0; i < n; ++i) {
      double pred = 0;
      for (size_t c = 0; c < columns; ++c) pred += coef[c] * x[i * columns + c];
      w[i] = std::fabs(y[i] - pred);
      scale += w[i];
    }
    const double eps = std::max(1e-6, 1e-6 * scale / static_cast<double>(n));
    for (double& v : w) v = 1.0 / std::max(v, eps);
  }
  coef[0] = std::max(0.0, coef[0]);
  return coef;
}

LatencyFit fit_latencies(const std::vector<CalibrationRun>& runs, const CostParams& base) {
  LatencyFit out;
  out.event_latency_ns = base.event_latency_ns;
  out.trigger_ns = base.trigger_ns;
  out.fanout_ns = base.fanout_ns;
  out.dispatch_ns = base.dispatch_ns;
  out.step_ns = base.step_ns;
  constexpr size_t kMaxWaits = 40000;
  // 1. Latency from the waits that started after their worker was free.
  std::vector<Wait> waits;
  std::vector<double> link;
  std::vector<Gap> gaps;
  for (const CalibrationRun& r : runs) observe(r, base, waits, link, gaps, false, 0);
  CostParams p = base;
  if (!waits.empty()) {
    const std::vector<double> c = fit_latency(thin(waits, kMaxWaits));
    p.event_latency_ns = c[0], p.trigger_ns = c[1], p.fanout_ns = c[2];
  }
  // 2. Gaps of tasks whose events were ready when their worker became free, then 3. the
  // latency again from the waits the events decided beyond that gap.
  for (int round = 0; round < 2; ++round) {
    waits.clear();
    link.clear();
    gaps.clear();
    for (const CalibrationRun& r : runs) observe(r, p, waits, link, gaps, round == 1, p.dispatch_ns);
    std::vector<double> within, at_step;
    for (const Gap& g : gaps)
      if (g.ready_after <= 0 && g.gap >= 0) (g.step_start ? at_step : within).push_back(g.gap);
    // Where every task waited for an event, the gap before the wait began says it (the
    // simulator's wait begins when the worker is free; the GPU's dispatch warp starts
    // waiting before the previous task ends, so there this gives 0).
    if (within.empty())
      for (const Gap& g : gaps)
        if (!g.step_start) within.push_back(std::max(0.0, g.wait_gap));
    if (at_step.empty())
      for (const Gap& g : gaps)
        if (g.step_start) at_step.push_back(std::max(0.0, g.wait_gap));
    if (!within.empty()) p.dispatch_ns = median(within);
    if (!at_step.empty()) p.step_ns = std::max(0.0, median(at_step) - p.dispatch_ns);
    out.dispatch_samples = static_cast<int64_t>(within.size());
    out.step_samples = static_cast<int64_t>(at_step.size());
    if (round == 1 && !waits.empty()) {
      const std::vector<double> c = fit_latency(thin(waits, kMaxWaits));
      p.event_latency_ns = c[0], p.trigger_ns = c[1], p.fanout_ns = c[2];
    }
  }
  out.latency_samples = static_cast<int64_t>(waits.size());
  out.link_samples = static_cast<int64_t>(link.size());
  out.link_latency_ns = link.empty() ? base.link_latency_ns : std::max(0.0, median(link) - p.event_latency_ns);
  out.event_latency_ns = p.event_latency_ns;
  out.trigger_ns = p.trigger_ns;
  out.fanout_ns = p.fanout_ns;
  out.dispatch_ns = p.dispatch_ns;
  out.step_ns = p.step_ns;
  return out;
}

}  // namespace mpk
