// Cost-model calibration: medians for the machine-wide latencies, a one-dimensional
// search over fixed_ns with closed-form bytes_scale per task kind.
#include "traces/calibrate.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "traces/run_derive.h"
#include "traces/simulator.h"

namespace mpk {
namespace {

// Cumulative bytes one busy SM could stream since the run's first event, given how
// many SMs were busy at each instant (the simulator's sharing rule; at least one).
class ServiceProfile {
 public:
  ServiceProfile(const std::vector<Execution>& execs, const CostParams& c) : c_(c) {
    std::vector<std::pair<int64_t, int>> edges;
    edges.reserve(execs.size() * 2);
    for (const Execution& e : execs) {
      edges.push_back({e.start_ns, +1});
      edges.push_back({e.end_ns, -1});
    }
    std::sort(edges.begin(), edges.end());
    int64_t busy = 0;
    double served = 0;
    for (size_t i = 0; i < edges.size();) {
      const int64_t t = edges[i].first;
      if (!times_.empty()) served += rate_of(busy) * static_cast<double>(t - times_.back());
      while (i < edges.size() && edges[i].first == t) busy += edges[i++].second;
      times_.push_back(t);
      served_.push_back(served);
      busy_.push_back(busy);
    }
  }

  double at(double t) const {
    if (times_.empty() || t <= static_cast<double>(times_[0])) return 0;
    auto it = std::upper_bound(times_.begin(), times_.end(), t,
                               [](double v, int64_t x) { return v < static_cast<double>(x); });
    const size_t j = static_cast<size_t>(it - times_.begin()) - 1;
    return served_[j] + rate_of(busy_[j]) * (t - static_cast<double>(times_[j]));
  }

  // The time at which `amount` more bytes have been served after t0.
  double finish(double t0, double amount) const {
    if (times_.empty()) return t0 + amount / rate_of(1);
    const double target = at(t0) + amount;
    if (t0 < static_cast<double>(times_[0]) && target <= 0) return t0;
    auto it = std::upper_bound(served_.begin(), served_.end(), target);
    const size_t j = it == served_.begin() ? 0 : static_cast<size_t>(it - served_.begin()) - 1;
    return static_cast<double>(times_[j]) + (target - served_[j]) / rate_of(busy_[j]);
  }

 private:
  double rate_of(int64_t busy) const { return shared_rate(c_, std::max<int64_t>(busy, 1)); }

  const CostParams& c_;
  std::vector<int64_t> times_;
  std::vector<double> served_;
  std::vector<int64_t> busy_;
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
  double fixed = 0, scale = 1, cost = 0;
};

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

KindFit fit_kind(TaskKind kind, const ServiceProfile& prof, const std::vector<Sample>& all,
                 const KindCost& base) {
  KindFit out;
  out.kind = kind;
  out.samples = static_cast<int64_t>(all.size());
  double mean = 0;
  for (const Sample& x : all) mean += x.dur;
  out.mean_ns = mean / static_cast<double>(all.size());
  // Keep the search affordable on huge runs: an even subsample.
  std::vector<Sample> s;
  const size_t stride = std::max<size_t>(1, all.size() / 20000);
  double min_dur = std::numeric_limits<double>::infinity();
  bool any_bytes = false;
  for (size_t i = 0; i < all.size(); i += stride) {
    s.push_back(all[i]);
    min_dur = std::min(min_dur, all[i].dur);
    any_bytes = any_bytes || all[i].bytes > 0;
  }
  Fit best;
  if (!any_bytes) {
    best.fixed = out.mean_ns;
    best.scale = base.bytes_scale;
  } else {
    const int grid = 64;
    int best_j = 0;
    for (int j = 0; j <= grid; ++j) {
      Fit f = fit_for(prof, s, min_dur * j / grid);
      if (j == 0 || f.cost < best.cost) {
        best = f;
        best_j = j;
      }
    }
    double lo = min_dur * std::max(0, best_j - 1) / grid;
    double hi = min_dur * std::min(grid, best_j + 1) / grid;
    const double phi = 0.5 * (std::sqrt(5.0) - 1);
    for (int it = 0; it < 48 && hi - lo > 1e-3; ++it) {
      const double a = hi - phi * (hi - lo), b = lo + phi * (hi - lo);
      Fit fa = fit_for(prof, s, a), fb = fit_for(prof, s, b);
      if (fa.cost < best.cost) best = fa;
      if (fb.cost < best.cost) best = fb;
      if (fa.cost <= fb.cost) hi = b;
      else lo = a;
    }
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

  // Per task kind.
  const ServiceProfile prof(execs, cal.params);
  std::vector<std::vector<Sample>> by_kind(kNumTaskKinds);
  for (const Execution& e : execs) {
    const Task& t = graph.graph.tasks[e.task];
    const double dur = static_cast<double>(e.end_ns - e.start_ns);
    if (dur <= 0) continue;
    const double start = static_cast<double>(e.start_ns);
    const double rate = (prof.at(start + dur) - prof.at(start)) / dur;
    by_kind[static_cast<size_t>(t.kind)].push_back(
        {start, dur, static_cast<double>(t.bytes), rate > 0 ? 1.0 / (rate * rate) : 1.0});
  }
  for (int k = 0; k < kNumTaskKinds; ++k) {
    if (by_kind[k].empty()) continue;
    const TaskKind kind = static_cast<TaskKind>(k);
    KindFit f = fit_kind(kind, prof, by_kind[k], base.cost_of(kind));
    cal.params.kinds[k].fixed_ns = f.fixed_ns;
    cal.params.kinds[k].bytes_scale = f.bytes_scale;
    cal.fits.push_back(f);
  }
  return cal;
}

}  // namespace mpk
