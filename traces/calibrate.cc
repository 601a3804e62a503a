// Cost-model calibration: medians for the machine-wide latencies, a one-dimensional
// search over fixed_ns with closed-form bytes_scale per task kind.
#include "traces/calibrate.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "ir/error.h"
#include "traces/run_derive.h"
#include "traces/simulator.h"
#include "traces/trace_limits.h"

namespace mpk {
namespace {

// Cumulative bytes one busy SM could stream since the run's first event, given how
// many SMs were busy at each instant (the simulator's sharing rule; at least one).
class ServiceProfile {
 public:
  explicit ServiceProfile(const std::vector<Execution>& execs) {
    std::vector<std::pair<int64_t, int>> edges;
    edges.reserve(execs.size() * 2);
    for (const Execution& e : execs) {
      edges.push_back({e.start_ns, +1});
      edges.push_back({e.end_ns, -1});
    }
    std::sort(edges.begin(), edges.end());
    int64_t busy = 0;
    for (size_t i = 0; i < edges.size();) {
      const int64_t t = edges[i].first;
      while (i < edges.size() && edges[i].first == t) busy += edges[i++].second;
      times_.push_back(t);
      busy_.push_back(busy);
    }
  }

  // Recomputes the cumulative service for the bandwidths in `c`.
  void set_rates(const CostParams& c) {
    rate_one_ = shared_rate(c, 1);
    rates_.resize(times_.size());
    served_.resize(times_.size());
    double served = 0;
    for (size_t j = 0; j < times_.size(); ++j) {
      if (j > 0) served += rates_[j - 1] * static_cast<double>(times_[j] - times_[j - 1]);
      rates_[j] = shared_rate(c, std::max<int64_t>(busy_[j], 1));
      served_[j] = served;
    }
  }

  double at(double t) const {
    if (times_.empty() || t <= static_cast<double>(times_[0])) return 0;
    auto it = std::upper_bound(times_.begin(), times_.end(), t,
                               [](double v, int64_t x) { return v < static_cast<double>(x); });
    const size_t j = static_cast<size_t>(it - times_.begin()) - 1;
    return served_[j] + rates_[j] * (t - static_cast<double>(times_[j]));
  }

  // The time at which `amount` more bytes have been served after t0.
  double finish(double t0, double amount) const {
    if (times_.empty()) return t0 + amount / rate_one_;
    const double target = at(t0) + amount;
    if (t0 < static_cast<double>(times_[0]) && target <= 0) return t0;
    auto it = std::upper_bound(served_.begin(), served_.end(), target);
    const size_t j = it == served_.begin() ? 0 : static_cast<size_t>(it - served_.begin()) - 1;
    return static_cast<double>(times_[j]) + (target - served_[j]) / rates_[j];
  }

 private:
  std::vector<int64_t> times_;
  std::vector<int64_t> busy_;
  std::vector<double> rates_, served_;
  double rate_one_ = 1;
};

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  return *mid;
}

struct Sample {
  double start, dur, bytes, weight;  // weight: 1 / (mean rate over the task)^2
};

struct Fit {
  double fixed = 0, scale = 1, cost = -1;  // cost < 0: not evaluated
};

// Minimizes f over [lo, hi]: a grid of grid + 1 points, then a golden-section search
// between the best grid point's neighbours. Returns the best x seen.
template <class F>
double minimize(F f, double lo, double hi, int grid, int iters) {
  double best_x = lo, best_v = f(lo);
  for (int j = 1; j <= grid; ++j) {
    const double x = lo + (hi - lo) * j / grid;
    const double v = f(x);
    if (v < best_v) best_v = v, best_x = x;
  }
  const double step = (hi - lo) / grid;
  double a = std::max(lo, best_x - step), b = std::min(hi, best_x + step);
  const double phi = 0.5 * (std::sqrt(5.0) - 1);
  double c = b - phi * (b - a), d = a + phi * (b - a);
  double fc = f(c), fd = f(d);
  for (int it = 0; it < iters; ++it) {
    if (fc <= fd) {
      b = d, d = c, fd = fc;
      c = b - phi * (b - a), fc = f(c);
    } else {
      a = c, c = d, fc = fd;
      d = a + phi * (b - a), fd = f(d);
    }
  }
  if (fc < best_v) best_v = fc, best_x = c;
  if (fd < best_v) best_v = fd, best_x = d;
  return best_x;
}

Fit fit_for(const ServiceProfile& prof, const std::vector<Sample>& s, double fixed) {
  double num = 0, den = 0;
  std::vector<double> g(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    g[i] = prof.at(s[i].start + s[i].dur) - prof.at(s[i].start + fixed);
    num += s[i].weight * g[i] * s[i].bytes;
    den += s[i].weight * s[i].bytes * s[i].bytes;
  }
  Fit f;
  f.fixed = fixed;
  f.scale = den > 0 ? std::max(0.0, num / den) : 1;
  for (size_t i = 0; i < s.size(); ++i) {
    const double r = g[i] - f.scale * s[i].bytes;
    f.cost += s[i].weight * r * r;
  }
  return f;
}

// `s`: an even subsample of the kind's executions (at most a few thousand).
KindFit fit_kind(TaskKind kind, const ServiceProfile& prof, const std::vector<Sample>& s,
                 const KindCost& base) {
  KindFit out;
  out.kind = kind;
  double min_dur = std::numeric_limits<double>::infinity();
  bool any_bytes = false;
  for (const Sample& x : s) {
    min_dur = std::min(min_dur, x.dur);
    any_bytes = any_bytes || x.bytes > 0;
  }
  Fit best;
  if (!any_bytes) {
    double mean = 0;
    for (const Sample& x : s) mean += x.dur;
    best.fixed = mean / static_cast<double>(s.size());
    best.scale = base.bytes_scale;
  } else {
    minimize([&](double fixed) {
      const Fit f = fit_for(prof, s, fixed);
      if (f.cost < best.cost || best.cost < 0) best = f;
      return f.cost;
    }, 0, min_dur, 32, 30);
  }
  auto rms_of = [&](const Fit& f) {
    double sq = 0;
    for (const Sample& x : s) {
      const double pred = prof.finish(x.start + f.fixed, f.scale * x.bytes) - x.start;
      sq += (pred - x.dur) * (pred - x.dur);
    }
    return std::sqrt(sq / static_cast<double>(s.size()));
  };
  double rms = rms_of(best);
  // When the samples barely tell fixed time from streaming time (similar sizes, tiny
  // transfers), keep the base's fixed time unless the best split is better by more
  // than the clock's resolution.
  if (any_bytes) {
    const Fit anchored = fit_for(prof, s, std::clamp(base.fixed_ns, 0.0, min_dur));
    const double anchored_rms = rms_of(anchored);
    if (anchored_rms <= rms + 0.5) {
      best = anchored;
      rms = anchored_rms;
    }
  }
  out.fixed_ns = best.fixed;
  out.bytes_scale = best.scale;
  out.rms_error_ns = rms;
  return out;
}

}  // namespace

Calibration calibrate(const Module& graph, const std::vector<Execution>& execs,
                      const CostParams& base) {
  if (base.prefetch_bytes > 0)
    throw Error("calibration fits the model without the weight stream ahead of a task's "
                "start: set prefetch_bytes to 0 in the base cost file");
  Calibration cal;
  cal.params = base;
  int32_t steps = 0;
  for (const Execution& e : execs) steps = std::max(steps, e.step + 1);
  const BlameIndex blames(graph, execs, steps);

  // Machine-wide latencies.
  std::vector<double> latency, dispatch;
  std::vector<std::vector<const Execution*>> per_worker(graph.graph.schedule.workers.size());
  for (const Execution& e : execs) {
    if (e.worker >= 0 && static_cast<size_t>(e.worker) < per_worker.size())
      per_worker[e.worker].push_back(&e);
    if (e.start_ns <= e.wait_begin_ns) continue;
    const Blame b = blames.blame(e);
    if (b.event >= 0 && e.start_ns >= b.producer_end_ns)
      latency.push_back(static_cast<double>(e.start_ns - b.producer_end_ns));
  }
  for (auto& list : per_worker) {
    std::sort(list.begin(), list.end(),
              [](const Execution* a, const Execution* b) { return a->start_ns < b->start_ns; });
    for (size_t i = 1; i < list.size(); ++i)
      dispatch.push_back(static_cast<double>(std::max<int64_t>(0, list[i]->wait_begin_ns - list[i - 1]->end_ns)));
  }
  cal.latency_samples = static_cast<int64_t>(latency.size());
  cal.dispatch_samples = static_cast<int64_t>(dispatch.size());
  if (!latency.empty()) cal.params.event_latency_ns = median(latency);
  if (!dispatch.empty()) cal.params.dispatch_ns = median(dispatch);

  // Executions by task kind (with a duration to fit).
  std::vector<std::vector<const Execution*>> by_kind(kNumTaskKinds);
  for (const Execution& e : execs)
    if (e.end_ns > e.start_ns) by_kind[static_cast<size_t>(graph.graph.tasks[e.task].kind)].push_back(&e);

  // Per task kind under the sharing profile of `p`, on at most `max_samples` executions
  // of each kind; returns the rms error over all of them.
  ServiceProfile prof(execs);
  auto fit_kinds = [&](const CostParams& p, size_t max_samples, std::vector<KindFit>* fits) {
    prof.set_rates(p);
    double sq = 0, n = 0;
    for (int k = 0; k < kNumTaskKinds; ++k) {
      const auto& list = by_kind[k];
      if (list.empty()) continue;
      std::vector<Sample> samples;
      const size_t stride = std::max<size_t>(1, list.size() / max_samples);
      for (size_t i = 0; i < list.size(); i += stride) {
        const Execution& e = *list[i];
        const double start = static_cast<double>(e.start_ns);
        const double dur = static_cast<double>(e.end_ns - e.start_ns);
        const double rate = (prof.at(start + dur) - prof.at(start)) / dur;
        samples.push_back({start, dur, static_cast<double>(graph.graph.tasks[e.task].bytes),
                           rate > 0 ? 1.0 / (rate * rate) : 1.0});
      }
      const TaskKind kind = static_cast<TaskKind>(k);
      KindFit f = fit_kind(kind, prof, samples, base.cost_of(kind));
      f.samples = static_cast<int64_t>(list.size());
      double mean = 0;
      for (const Execution* e : list) mean += static_cast<double>(e->end_ns - e->start_ns);
      f.mean_ns = mean / static_cast<double>(list.size());
      sq += f.rms_error_ns * f.rms_error_ns * static_cast<double>(samples.size());
      n += static_cast<double>(samples.size());
      if (fits) fits->push_back(f);
    }
    return n > 0 ? std::sqrt(sq / n) : 0.0;
  };

  // One SM's own bandwidth: a search over multiples of its fair share (log scale),
  // kept at the base's value unless another predicts durations better by > 0.5 ns.
  const double fair = cal.params.mem_bandwidth / std::max(1, graph.machine.sm_count);
  auto error_at = [&](double log_mult) {
    CostParams p = cal.params;
    p.sm_bandwidth = fair * std::exp(log_mult);
    return fit_kinds(p, 1000, nullptr);
  };
  const double base_log = std::log(std::max(cal.params.sm_bandwidth / fair, 1e-3));
  const double base_err = error_at(base_log);
  double best_log = base_log, best_err = base_err;
  minimize([&](double x) {
    const double err = error_at(x);
    if (err < best_err) best_err = err, best_log = x;
    return err;
  }, 0, std::log(8.0), 8, 12);
  if (base_err > best_err + 0.5) {
    cal.params.sm_bandwidth = fair * std::exp(best_log);
    cal.sm_bandwidth_fitted = true;
  }
  fit_kinds(cal.params, 20000, &cal.fits);
  for (const KindFit& f : cal.fits) {
    cal.params.kinds[static_cast<size_t>(f.kind)].fixed_ns = f.fixed_ns;
    cal.params.kinds[static_cast<size_t>(f.kind)].bytes_scale = f.bytes_scale;
  }
  return cal;
}

double mean_step_ns(const std::vector<Execution>& execs, int32_t steps) {
  int64_t end = 0;
  for (const Execution& e : execs) end = std::max(end, e.end_ns);
  return steps > 0 ? static_cast<double>(end) / steps : 0;
}

double match_makespan(const Module& graph, int32_t steps, double measured_step_ns,
                      CostParams& p) {
  auto error_at = [&](double latency) {
    CostParams q = p;
    q.event_latency_ns = latency;
    return (mean_step_ns(simulate(graph, q, steps), steps) - measured_step_ns) / measured_step_ns;
  };
  double lo = 0, hi = std::min(std::max(4 * p.event_latency_ns, 1000.0), kMaxCostNs);
  double e_lo = error_at(lo), e_hi = error_at(hi);
  if (e_lo >= 0 || e_hi <= 0) {  // no latency in range matches: keep the closer end
    const double e_now = error_at(p.event_latency_ns);
    if (std::fabs(e_lo) < std::fabs(e_now) && std::fabs(e_lo) <= std::fabs(e_hi)) {
      p.event_latency_ns = lo;
      return e_lo;
    }
    if (std::fabs(e_hi) < std::fabs(e_now)) {
      p.event_latency_ns = hi;
      return e_hi;
    }
    return e_now;
  }
  for (int it = 0; it < 24 && hi - lo > 1.0; ++it) {
    const double mid = 0.5 * (lo + hi);
    const double e = error_at(mid);
    if (e < 0) lo = mid, e_lo = e;
    else hi = mid, e_hi = e;
  }
  const bool low_closer = std::fabs(e_lo) <= std::fabs(e_hi);
  p.event_latency_ns = low_closer ? lo : hi;
  return low_closer ? e_lo : e_hi;
}

}  // namespace mpk
