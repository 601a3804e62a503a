// Calibration: latencies from the waits (calibrate_latency.cc), then searches over one
// SM's bandwidth, positional KV-cache reads and the ring, each judged by the per-kind
// fits (calibrate_kinds.cc) over every run's own sharing profile.
#include "traces/calibrate.h"

#include <map>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <thread>

#include "ir/error.h"
#include "ir/machine_check.h"
#include "ir/ops/linear.h"
#include "traces/calibrate_kinds.h"
#include "traces/calibrate_latency.h"
#include "traces/minimize.h"
#include "traces/simulator.h"

namespace mpk {
namespace {

// One run as the kind fits need it: its sharing profile and, per execution, when the
// worker's weight stream could fetch ahead for it and the cache bytes the step did not
// read.
struct RunContext {
  std::unique_ptr<ServiceProfile> profile;
  // The worker's idle intervals since its last task that streams weights, up to this
  // execution's start (its stream fetches ahead in them, past tasks without weights,
  // as the simulator's does): windows[window_begin[i] .. window_begin[i + 1]).
  std::vector<std::pair<double, double>> windows;
  std::vector<size_t> window_begin;
  std::vector<double> cache_missing;  // cache bytes beyond the step's position
  std::vector<double> cache_share;    // the share of its cache positions the step has
  // Cooperative shares (the simulator's pools): per execution its group, the shares of
  // one operator at one step, or -1; per group the operator's bytes; per execution the
  // bytes it drew (draw_shares).
  std::vector<int32_t> coop_group;
  std::vector<double> group_bytes;
  std::vector<double> drawn;
};

// The bytes one SM could stream in execution i's windows under the current rates.
double window_service(const RunContext& c, size_t i) {
  double served = 0;
  for (size_t k = c.window_begin[i]; k < c.window_begin[i + 1]; ++k)
    served += c.profile->at(c.windows[k].second) - c.profile->at(c.windows[k].first);
  return served;
}

// What each cooperative share drew: its group's bytes split in proportion to the bytes
// one SM could stream from the end of the share's fixed time (`p`'s, the fit so far) to
// its end under the profile's current rates, and in its windows up to the ring's size
// when a ring streams ahead, as the GPU's fastest SMs claim the most units.
void draw_shares(RunContext& c, const CalibrationRun& run, const CostParams& p) {
  const auto& x = run.executions;
  std::vector<double> total(c.group_bytes.size(), 0.0);
  for (size_t i = 0; i < x.size(); ++i)
    if (const int32_t g = c.coop_group[i]; g >= 0) {
      const TaskKind kind = run.module.graph.tasks[static_cast<size_t>(x[i].task)].kind;
      const double from = static_cast<double>(x[i].start_ns) + p.cost_of(kind).fixed_ns;
      c.drawn[i] = c.profile->at(static_cast<double>(x[i].end_ns)) - c.profile->at(from);
      if (p.prefetch_bytes > 0) c.drawn[i] += std::min(p.prefetch_bytes, window_service(c, i));
      c.drawn[i] = std::max(0.0, c.drawn[i]);
      total[static_cast<size_t>(g)] += c.drawn[i];
    }
  for (size_t i = 0; i < x.size(); ++i)
    if (const int32_t g = c.coop_group[i]; g >= 0) {
      const double t = total[static_cast<size_t>(g)];
      c.drawn[i] = t > 0 ? c.group_bytes[static_cast<size_t>(g)] * c.drawn[i] / t : 0.0;
    }
}

// Each execution's windows (RunContext); `base` tells which tasks stream weights (a kind
// with a prefetch share, and bytes).
void find_windows(const CalibrationRun& run, const CostParams& base, RunContext& c) {
  const auto& x = run.executions;
  std::vector<size_t> order(x.size());
  for (size_t i = 0; i < x.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return x[a].worker != x[b].worker ? x[a].worker < x[b].worker : x[a].start_ns < x[b].start_ns;
  });
  // Each execution's own idle interval, in worker order; a task that streams takes the
  // ones since the last such task on its worker.
  std::vector<std::pair<double, double>> own;
  own.reserve(x.size());
  std::vector<std::pair<size_t, size_t>> range(x.size());
  size_t pending = 0;
  for (size_t j = 0; j < order.size(); ++j) {
    const Execution& e = x[order[j]];
    const bool first = j == 0 || x[order[j - 1]].worker != e.worker;
    if (first) pending = own.size();
    own.push_back({first ? 0.0 : static_cast<double>(x[order[j - 1]].end_ns), static_cast<double>(e.start_ns)});
    const Task& t = run.module.graph.tasks[static_cast<size_t>(e.task)];
    if (base.cost_of(t.kind).prefetch > 0 && t.bytes > 0) {
      range[order[j]] = {pending, own.size()};
      pending = own.size();
    } else {
      range[order[j]] = {own.size() - 1, own.size()};
    }
  }
  c.window_begin.assign(x.size() + 1, 0);
  for (size_t i = 0; i < x.size(); ++i) {
    c.window_begin[i] = c.windows.size();
    c.windows.insert(c.windows.end(), own.begin() + static_cast<std::ptrdiff_t>(range[i].first),
                     own.begin() + static_cast<std::ptrdiff_t>(range[i].second));
  }
  c.window_begin[x.size()] = c.windows.size();
}

// The cooperative shares' groups (RunContext).
void find_coop_groups(const CalibrationRun& run, RunContext& c) {
  const auto& x = run.executions;
  std::map<std::pair<OpId, int32_t>, int32_t> groups;
  c.coop_group.assign(x.size(), -1);
  c.drawn.assign(x.size(), 0.0);
  for (size_t i = 0; i < x.size(); ++i) {
    const Task& t = run.module.graph.tasks[static_cast<size_t>(x[i].task)];
    if (!coop_share(t).cooperative()) continue;
    const auto [it, fresh] = groups.try_emplace({t.op, x[i].step}, static_cast<int32_t>(c.group_bytes.size()));
    if (fresh) c.group_bytes.push_back(0);
    c.coop_group[i] = it->second;
    c.group_bytes[static_cast<size_t>(it->second)] += static_cast<double>(t.bytes);
  }
}

RunContext context_of(const CalibrationRun& run, const CostParams& base,
                      const std::vector<std::pair<double, double>>& extra = {}) {
  RunContext c;
  const auto& x = run.executions;
  c.profile = std::make_unique<ServiceProfile>(x, extra);
  find_windows(run, base, c);
  find_coop_groups(run, c);
  CostParams unit;  // bytes_scale 1: the cache reads' own bytes
  unit.positional_cache = true;
  std::vector<TaskCost> costs;
  for (const Task& t : run.module.graph.tasks) costs.push_back(task_cost(unit, run.module, t));
  c.cache_missing.assign(x.size(), 0.0);
  c.cache_share.assign(x.size(), 1.0);
  for (size_t i = 0; i < x.size(); ++i) {
    const TaskCost& t = costs[static_cast<size_t>(x[i].task)];
    c.cache_missing[i] = t.direct_bytes - t.direct_bytes_at(x[i].step);
    c.cache_share[i] = t.cache_share_at(x[i].step);
  }
  return c;
}

// The executions of every kind across the runs, as (run, execution) pairs.
using KindRefs = std::vector<std::vector<std::pair<size_t, size_t>>>;

// Which kinds a fit covers: all, the ones that stream weights ahead, the ones that do not,
// the ones that read KV caches (what the ring and positional reads are judged on).
enum class Kinds { kAll, kStreaming, kDirect, kCacheReading };

class KindFitter {
 public:
  KindFitter(const std::vector<CalibrationRun>& runs, const CostParams& base)
      : runs_(runs), base_(base), refs_(kNumTaskKinds) {
    for (size_t r = 0; r < runs.size(); ++r) {
      contexts_.push_back(context_of(runs[r], base));
      for (size_t i = 0; i < runs[r].executions.size(); ++i) {
        const Execution& e = runs[r].executions[i];
        if (e.end_ns <= e.start_ns) continue;
        const auto k = static_cast<size_t>(runs[r].module.graph.tasks[static_cast<size_t>(e.task)].kind);
        refs_[k].push_back({r, i});
        if (contexts_[r].cache_share[i] < 1) reads_cache_[k] = true;
      }
    }
  }

  bool any_cache() const {
    return std::find(reads_cache_.begin(), reads_cache_.end(), true) != reads_cache_.end();
  }
  bool streams(TaskKind k) const { return base_.cost_of(k).prefetch > 0 && !refs_[static_cast<size_t>(k)].empty(); }

  // Adds the weight streams' prefetch intervals of `p` to the profiles (a streaming
  // worker shares the bandwidth too). Where a stream ends depends on the profile it
  // adds to, and a change travels along the timeline: rounds until no stream's end moves
  // by half a nanosecond (at most 16). The runs settle on as many threads as the machine
  // has.
  void add_stream_intervals(const CostParams& p) {
    std::atomic<size_t> next_run{0};
    auto work = [&] {
      for (size_t r; (r = next_run++) < runs_.size();) settle_run(p, r);
    };
    const size_t threads = std::min<size_t>(runs_.size(), std::max(1u, std::thread::hardware_concurrency()));
    std::vector<std::thread> pool;
    for (size_t i = 1; i < threads; ++i) pool.emplace_back(work);
    work();
    for (std::thread& t : pool) t.join();
  }

  // Fits the kinds of `which` under `p` on at most `max_samples` executions each; returns
  // the rms over all samples of the error relative to the kind's mean duration, the fits
  // into `fits`.
  double fit(const CostParams& p, size_t max_samples, Kinds which, std::vector<KindFit>* fits) {
    for (size_t r = 0; r < runs_.size(); ++r) {
      contexts_[r].profile->set_rates(p);
      draw_shares(contexts_[r], runs_[r], p);
    }
    double sq = 0, n = 0;
    for (int k = 0; k < kNumTaskKinds; ++k) {
      const TaskKind kind = static_cast<TaskKind>(k);
      const auto& list = refs_[static_cast<size_t>(k)];
      if (list.empty() || (which == Kinds::kStreaming && !streams(kind)) || (which == Kinds::kDirect && streams(kind)) ||
          (which == Kinds::kCacheReading && !reads_cache_[static_cast<size_t>(k)]))
        continue;
      const KindCost kc = p.cost_of(kind);
      std::vector<KindSample> samples;
      const double stride = std::max(1.0, static_cast<double>(list.size()) / static_cast<double>(max_samples));
      for (double at = 0; at < static_cast<double>(list.size()); at += stride) {
        const auto [r, i] = list[static_cast<size_t>(at)];
        const Execution& e = runs_[r].executions[i];
        const Task& t = runs_[r].module.graph.tasks[static_cast<size_t>(e.task)];
        KindSample x;
        x.profile = contexts_[r].profile.get();
        x.start = static_cast<double>(e.start_ns);
        x.end = static_cast<double>(e.end_ns);
        x.ahead = contexts_[r].windows.data() + contexts_[r].window_begin[i];
        x.ahead_count = contexts_[r].window_begin[i + 1] - contexts_[r].window_begin[i];
        x.bytes = contexts_[r].coop_group[i] >= 0 ? contexts_[r].drawn[i] : static_cast<double>(t.bytes);
        x.cache_missing = contexts_[r].cache_missing[i];
        x.compute_ns = kc.flops_per_ns > 0 ? static_cast<double>(t.flops) / kc.flops_per_ns : 0;
        x.cache_share = contexts_[r].cache_share[i];
        samples.push_back(x);
      }
      const KindShape shape{std::clamp(kc.prefetch, 0.0, 1.0), p.prefetch_bytes, p.positional_cache};
      const KindResult res = fit_kind(samples, shape, base_.cost_of(kind));
      // Each kind's error relative to its mean duration, so that a few long tasks (the LM
      // head) weigh no more than many short ones.
      double mean = 0;
      for (const KindSample& x : samples) mean += x.end - x.start;
      mean = std::max(1.0, mean / static_cast<double>(samples.size()));
      sq += (res.rms_error_ns / mean) * (res.rms_error_ns / mean) * static_cast<double>(samples.size());
      n += static_cast<double>(samples.size());
      if (!fits) continue;
      KindFit f;
      f.kind = kind;
      f.samples = static_cast<int64_t>(list.size());
      f.fixed_ns = res.fixed_ns;
      f.bytes_scale = res.bytes_scale;
      f.rms_error_ns = res.rms_error_ns;
      for (const auto& [r, i] : list)
        f.mean_ns += static_cast<double>(runs_[r].executions[i].end_ns - runs_[r].executions[i].start_ns);
      f.mean_ns /= static_cast<double>(list.size());
      fits->push_back(f);
    }
    return n > 0 ? std::sqrt(sq / n) : 0.0;
  }

 private:
  // One run's profile with its weight streams settled.
  void settle_run(const CostParams& p, size_t r) {
    const CalibrationRun& run = runs_[r];
    contexts_[r] = context_of(run, base_);
    std::vector<double> ahead_of;  // per task: the bytes its stream fetches ahead
    for (const Task& t : run.module.graph.tasks)
      ahead_of.push_back(std::min(task_cost(p, t).stream_bytes, p.prefetch_bytes));
    std::vector<std::pair<double, double>> extra;
    for (int round = 0; round < 16; ++round) {
      contexts_[r].profile->set_rates(p);
      std::vector<std::pair<double, double>> next;
      double moved = 0;
      for (size_t i = 0; i < run.executions.size(); ++i) {
        const Execution& e = run.executions[i];
        double ahead = ahead_of[static_cast<size_t>(e.task)];
        const RunContext& c = contexts_[r];
        for (size_t k = c.window_begin[i]; k < c.window_begin[i + 1] && ahead > 0; ++k) {
          const auto [from, to] = c.windows[k];
          const double end = std::min(to, c.profile->finish(from, ahead));
          ahead -= c.profile->at(end) - c.profile->at(from);
          next.push_back({from, end});
          const size_t n = next.size() - 1;
          moved = std::max(moved, n < extra.size() ? std::fabs(extra[n].second - next[n].second) : 1.0);
        }
      }
      if (extra.size() == next.size() && moved < 0.5) break;
      extra = std::move(next);
      contexts_[r] = context_of(run, base_, extra);
    }
  }

  const std::vector<CalibrationRun>& runs_;
  const CostParams& base_;
  std::vector<RunContext> contexts_;
  KindRefs refs_;
  std::vector<bool> reads_cache_ = std::vector<bool>(kNumTaskKinds, false);
};

// How much better (in relative rms error) a searched value must predict durations than
// the base's value to replace it: 0.01 % of a task's duration.
constexpr double kBetter = 1e-4;

// One SM's own bandwidth: a search over multiples of its fair share (log scale), kept at
// the base's value unless another predicts durations better by kBetter.
void fit_sm_bandwidth(KindFitter& fitter, int32_t sm_count, size_t samples, Calibration& cal) {
  const double fair = cal.params.mem_bandwidth / std::max(1, sm_count);
  auto error_at = [&](double log_mult) {
    CostParams p = cal.params;
    p.sm_bandwidth = fair * std::exp(log_mult);
    return fitter.fit(p, samples, Kinds::kAll, nullptr);
  };
  const double base_log = std::log(std::max(cal.params.sm_bandwidth / fair, 1e-3));
  const double base_err = error_at(base_log);
  double best_log = base_log, best_err = base_err;
  minimize_1d([&](double x) {
    const double err = error_at(x);
    if (err < best_err) best_err = err, best_log = x;
    return err;
  }, 0, std::log(8.0), 6, 10);
  if (base_err > best_err + kBetter) {
    cal.params.sm_bandwidth = fair * std::exp(best_log);
    cal.sm_bandwidth_fitted = true;
  }
}

// Each run's measured makespan per step over its first kJudgeSteps steps (at most), what
// the ring is judged against.
constexpr int32_t kJudgeSteps = 4;
std::vector<double> measured_judge_steps(const std::vector<CalibrationRun>& runs) {
  std::vector<double> out;
  for (const CalibrationRun& r : runs) {
    const int32_t steps = std::min(r.steps, kJudgeSteps);
    std::vector<Execution> first;
    for (const Execution& e : r.executions)
      if (e.step < steps) first.push_back(e);
    out.push_back(mean_step_ns(first, steps));
  }
  return out;
}

// The simulated makespan per step of every run under `p` against `measured`
// (measured_judge_steps): the rms of the relative errors.
double makespan_error(const std::vector<CalibrationRun>& runs, const std::vector<double>& measured,
                      const CostParams& p) {
  double sq = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    const int32_t steps = std::min(runs[i].steps, kJudgeSteps);
    const double got = mean_step_ns(simulate(runs[i].module, p, steps), steps);
    const double rel = measured[i] > 0 ? (got - measured[i]) / measured[i] : 0;
    sq += rel * rel;
  }
  return std::sqrt(sq / static_cast<double>(std::max<size_t>(runs.size(), 1)));
}

// The ring by the task durations: none, or a size between 4 KiB and 2 MiB (log scale),
// judged on the kinds that stream; kept at none unless a ring predicts them better by
// kBetter. (Recovers a simulated run's ring; on GPU runs it is only a start, below.)
void fit_ring_to_durations(KindFitter& fitter, Calibration& cal) {
  auto error_at = [&](double ring) {
    CostParams p = cal.params;
    p.prefetch_bytes = ring;
    return fitter.fit(p, 300, Kinds::kStreaming, nullptr);
  };
  const double none = error_at(0);
  double best_log = 0, best_err = std::numeric_limits<double>::infinity();
  minimize_1d([&](double x) {
    const double err = error_at(std::exp(x));
    if (err < best_err) best_err = err, best_log = x;
    return err;
  }, std::log(4096.0), std::log(2097152.0), 9, 10);
  cal.params.prefetch_bytes = none > best_err + kBetter ? std::exp(best_log) : 0.0;
}

// The ring by what it is for, the runs' step time: the durations' ring against none and
// a ladder of sizes, each with the kinds refitted under its streams, judged by the
// simulated makespan against the measured one. On GPU runs the durations cannot tell
// ring sizes apart (a ring trades a kind's fixed time against its bytes, and different
// subsets of the runs pick sizes from 7 to 96 KiB); the step time can. Returns whether
// the ring changed.
bool fit_ring_to_makespan(const std::vector<CalibrationRun>& runs, KindFitter& fitter, Calibration& cal) {
  const std::vector<double> measured = measured_judge_steps(runs);
  auto error_at = [&](double ring) {
    CostParams p = cal.params;
    p.prefetch_bytes = ring;
    fitter.add_stream_intervals(p);
    std::vector<KindFit> fits;
    fitter.fit(p, 1000, Kinds::kAll, &fits);
    for (const KindFit& f : fits) {
      p.kinds[static_cast<size_t>(f.kind)].fixed_ns = f.fixed_ns;
      p.kinds[static_cast<size_t>(f.kind)].bytes_scale = f.bytes_scale;
    }
    return makespan_error(runs, measured, p);
  };
  constexpr double kKiB = 1024;
  const double start = cal.params.prefetch_bytes;
  double best_ring = start, best_err = error_at(start);
  for (const double ring : {0.0, 32 * kKiB, 64 * kKiB, 96 * kKiB, 128 * kKiB, 192 * kKiB}) {
    const double err = error_at(ring);
    if (err < best_err - kBetter) best_err = err, best_ring = ring;
  }
  cal.params.prefetch_bytes = best_ring;
  fitter.add_stream_intervals(cal.params);
  return best_ring != start;
}

// One SM's bandwidth by the step time, with the kinds held: a ladder from its fair share
// to twice that. The durations judge it where every SM streams, where it hardly matters;
// the step time of a schedule that streams a phase on fewer SMs (wave, zig-zag, pool,
// chain-aware) depends on it. Kept unless a rung predicts the step times better by kBetter.
// Returns whether it changed.
bool fit_sm_bandwidth_to_makespan(const std::vector<CalibrationRun>& runs, int32_t sm_count, Calibration& cal) {
  const std::vector<double> measured = measured_judge_steps(runs);
  const double fair = cal.params.mem_bandwidth / std::max(1, sm_count);
  auto error_at = [&](double bw) {
    CostParams p = cal.params;
    p.sm_bandwidth = bw;
    return makespan_error(runs, measured, p);
  };
  double best = cal.params.sm_bandwidth, best_err = error_at(best);
  for (const double mult : {1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.8, 2.0}) {
    const double err = error_at(fair * mult);
    if (err < best_err - kBetter) best_err = err, best = fair * mult;
  }
  const bool changed = best != cal.params.sm_bandwidth;
  cal.sm_bandwidth_fitted = cal.sm_bandwidth_fitted || changed;
  cal.params.sm_bandwidth = best;
  return changed;
}

// With a ring, the streams ahead share the bandwidth too: fit the kinds, add their
// streams to the profiles, twice (the second with the byte factors the first gives).
void settle_streams(KindFitter& fitter, Calibration& cal) {
  for (int round = 0; round < 2 && cal.params.prefetch_bytes > 0; ++round) {
    std::vector<KindFit> fits;
    fitter.fit(cal.params, 1000, Kinds::kAll, &fits);
    CostParams p = cal.params;
    for (const KindFit& f : fits) p.kinds[static_cast<size_t>(f.kind)].bytes_scale = f.bytes_scale;
    fitter.add_stream_intervals(p);
  }
}

}  // namespace

CalibrationRun load_calibration_run(const TraceReader& reader, int64_t id) {
  const RunRecord rec = reader.run(id);
  CalibrationRun r;
  r.label = reader.path() + " run " + std::to_string(id);
  r.model = rec.model;
  r.policy = rec.policy;
  Module graph = reader.load_graph(id);
  if (std::optional<Module> stored = reader.stored_module(id)) {
    r.module = std::move(*stored);
    r.module.machine = graph.machine;  // the device the run ran on
  } else {
    r.module = std::move(graph);
  }
  r.executions = reader.executions(id);
  r.steps = static_cast<int32_t>(rec.steps);
  for (const RunRecord& peer : rec.ranks > 1 ? reader.rank_runs(id) : std::vector<RunRecord>{}) {
    if (peer.id == id) continue;
    for (Execution x : reader.executions(peer.id)) {
      const int64_t shift = peer.rank_offset_ns - rec.rank_offset_ns;
      x.wait_begin_ns += shift;
      x.start_ns += shift;
      x.end_ns += shift;
      x.rank = peer.rank;
      r.peers.push_back(x);
    }
  }
  if (r.executions.empty()) throw Error(r.label + " has no executions");
  return r;
}

Calibration calibrate(const std::vector<CalibrationRun>& runs, const CostParams& base) {
  bool any = false;
  for (const CalibrationRun& r : runs) any = any || !r.executions.empty();
  if (!any) throw Error("calibration: no executions to fit");
  Calibration cal;
  cal.params = base;
  cal.params.prefetch_bytes = 0;
  cal.params.positional_cache = false;
  const LatencyFit lf = fit_latencies(runs, base);
  cal.params.event_latency_ns = lf.event_latency_ns;
  cal.params.trigger_ns = lf.trigger_ns;
  cal.params.fanout_ns = lf.fanout_ns;
  cal.params.dispatch_ns = lf.dispatch_ns;
  cal.params.step_ns = lf.step_ns;
  if (lf.link_samples > 0) cal.params.link_latency_ns = lf.link_latency_ns;
  cal.link_samples = lf.link_samples;
  cal.latency_samples = lf.latency_samples;
  cal.dispatch_samples = lf.dispatch_samples;
  cal.step_samples = lf.step_samples;

  KindFitter fitter(runs, base);
  const int32_t sm_count = runs.front().module.machine.sm_count;
  if (fitter.any_cache()) {
    CostParams p = cal.params;
    p.positional_cache = true;
    cal.params.positional_cache = fitter.fit(p, 1000, Kinds::kCacheReading, nullptr) <
                                  fitter.fit(cal.params, 1000, Kinds::kCacheReading, nullptr);
  }
  // The ring (its streams change the sharing profile one SM's bandwidth is judged
  // against), then one SM's bandwidth, then the ring again under it, by the durations and
  // then by the step time; one SM's bandwidth again when that moved the ring.
  bool any_stream = false;
  for (int k = 0; k < kNumTaskKinds; ++k) any_stream = any_stream || fitter.streams(static_cast<TaskKind>(k));
  for (int round = 0; round < 2 && any_stream; ++round) {
    fit_ring_to_durations(fitter, cal);
    settle_streams(fitter, cal);
  }
  fit_sm_bandwidth(fitter, sm_count, 1000, cal);
  if (any_stream) {
    if (cal.params.prefetch_bytes > 0) {
      fit_ring_to_durations(fitter, cal);
      settle_streams(fitter, cal);
    }
    if (fit_ring_to_makespan(runs, fitter, cal)) {
      settle_streams(fitter, cal);
      fit_sm_bandwidth(fitter, sm_count, 1000, cal);
    }
    settle_streams(fitter, cal);
  }
  // Twice: cooperative shares' bytes are split by the fixed times of the fit before.
  for (int round = 0; round < 2; ++round) {
    cal.fits.clear();
    fitter.fit(cal.params, 5000, Kinds::kAll, &cal.fits);
    for (const KindFit& f : cal.fits) {
      cal.params.kinds[static_cast<size_t>(f.kind)].fixed_ns = f.fixed_ns;
      cal.params.kinds[static_cast<size_t>(f.kind)].bytes_scale = f.bytes_scale;
    }
  }
  if (any_stream && fit_sm_bandwidth_to_makespan(runs, sm_count, cal)) {
    // The kinds that stream no weights, again under the SM's bandwidth the step time chose.
    fitter.add_stream_intervals(cal.params);
    std::vector<KindFit> direct;
    fitter.fit(cal.params, 5000, Kinds::kDirect, &direct);
    for (const KindFit& f : direct) {
      cal.params.kinds[static_cast<size_t>(f.kind)].fixed_ns = f.fixed_ns;
      cal.params.kinds[static_cast<size_t>(f.kind)].bytes_scale = f.bytes_scale;
      for (KindFit& g : cal.fits)
        if (g.kind == f.kind) g = f;
    }
  }
  return cal;
}

Calibration calibrate(const Module& graph, const std::vector<Execution>& execs,
                      const CostParams& base) {
  CalibrationRun r;
  r.label = graph.name;
  r.module = graph;
  r.executions = execs;
  for (const Execution& e : execs) r.steps = std::max(r.steps, e.step + 1);
  return calibrate(std::vector<CalibrationRun>{std::move(r)}, base);
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
