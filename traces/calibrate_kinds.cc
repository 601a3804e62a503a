// Per-kind fits: closed-form bytes_scale for a candidate fixed_ns where no bytes stream
// ahead, a nested one-dimensional search where they do.
#include "traces/calibrate_kinds.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "traces/minimize.h"

namespace mpk {
namespace {

struct Fit {
  double fixed = 0, scale = 1, cost = -1;  // cost < 0: not evaluated
};

double bytes_of(const KindSample& x, const KindShape& shape) {
  return x.bytes - (shape.positional ? x.cache_missing : 0.0);
}

// Least squares of the bytes served between start + fixed and the end against scale *
// bytes, weighted by 1 / (the task's mean rate)^2 so that the residuals count in ns.
Fit closed_form(const std::vector<KindSample>& s, const std::vector<double>& weight,
                const KindShape& shape, double fixed) {
  double num = 0, den = 0;
  std::vector<double> g(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    g[i] = s[i].served_end - s[i].profile->at(s[i].start + fixed);
    const double b = bytes_of(s[i], shape);
    num += weight[i] * g[i] * b;
    den += weight[i] * b * b;
  }
  Fit f;
  f.fixed = fixed;
  f.scale = den > 0 ? std::max(0.0, num / den) : 1;
  f.cost = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const double r = g[i] - f.scale * bytes_of(s[i], shape);
    f.cost += weight[i] * r * r;
  }
  return f;
}

double squared_error(const std::vector<KindSample>& s, const KindShape& shape, double fixed,
                     double scale) {
  double sq = 0;
  for (const KindSample& x : s) {
    const double r = predict_end(x, shape, fixed, scale) - x.end;
    sq += r * r;
  }
  return sq;
}

// Streaming ahead: coordinate descent from the closed-form estimate, the scale for the
// fixed time, then the fixed time for the scale, three rounds.
Fit nested(const std::vector<KindSample>& s, const KindShape& shape, double min_dur, Fit start) {
  Fit f = start;
  for (int round = 0; round < 3; ++round) {
    const double lo = 0.5 * f.scale, hi = std::max(2.0 * f.scale, 0.5);
    f.scale = minimize_1d([&](double scale) { return squared_error(s, shape, f.fixed, scale); },
                          lo, hi, 6, 16);
    f.fixed = minimize_1d([&](double fixed) { return squared_error(s, shape, fixed, f.scale); },
                          0, min_dur, 8, 12);
  }
  f.cost = squared_error(s, shape, f.fixed, f.scale);
  return f;
}

}  // namespace

double predict_end(const KindSample& x, const KindShape& shape, double fixed, double scale) {
  const ServiceProfile& p = *x.profile;
  const double total = scale * x.bytes;
  const double stream = shape.ring > 0 ? total * shape.stream_share : 0.0;
  const double cache = shape.positional ? scale * x.cache_missing : 0.0;
  const double direct = std::max(0.0, total - stream - cache);
  // The stream's rest after the start ends at `streamed`, when `served` bytes were served.
  double streamed = x.start, served = x.served_start;
  if (stream > 0) {
    const double ahead = std::min({stream, shape.ring, x.served_ahead});
    served += stream - ahead;
    streamed = p.time_of(served);
  }
  double end = std::max(streamed, x.start + fixed);
  if (direct > 0) end = p.time_of((end > streamed ? p.at(end) : served) + direct);
  return std::max(end, x.start + fixed + x.compute_ns * (shape.positional ? x.cache_share : 1.0));
}

KindResult fit_kind(std::vector<KindSample> s, const KindShape& shape, const KindCost& base) {
  KindResult out;
  if (s.empty()) return out;
  for (KindSample& x : s) {
    x.served_start = x.profile->at(x.start);
    x.served_end = x.profile->at(x.end);
    x.served_ahead = 0;
    for (size_t k = 0; k < x.ahead_count; ++k)
      x.served_ahead += x.profile->at(x.ahead[k].second) - x.profile->at(x.ahead[k].first);
    x.served_ahead = std::max(0.0, x.served_ahead);
  }
  double min_dur = std::numeric_limits<double>::infinity(), mean = 0;
  bool any_bytes = false;
  std::vector<double> weight(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    const KindSample& x = s[i];
    const double dur = x.end - x.start;
    min_dur = std::min(min_dur, dur);
    mean += dur;
    any_bytes = any_bytes || bytes_of(x, shape) > 0;
    const double rate = dur > 0 ? (x.served_end - x.served_start) / dur : 0;
    weight[i] = rate > 0 ? 1.0 / (rate * rate) : 1.0;
  }
  mean /= static_cast<double>(s.size());
  min_dur = std::max(0.0, min_dur);
  auto rms_of = [&](const Fit& f) {
    return std::sqrt(squared_error(s, shape, f.fixed, f.scale) / static_cast<double>(s.size()));
  };
  if (!any_bytes) {
    out.fixed_ns = mean;
    out.bytes_scale = base.bytes_scale;
    out.rms_error_ns = rms_of({mean, base.bytes_scale, 0});
    return out;
  }
  Fit best;
  minimize_1d([&](double fixed) {
    const Fit f = closed_form(s, weight, shape, fixed);
    if (best.cost < 0 || f.cost < best.cost) best = f;
    return f.cost;
  }, 0, min_dur, 32, 30);
  const bool streams = shape.ring > 0 && shape.stream_share > 0;
  if (streams) {
    // From the closed form's split and from the base's fixed time: the valley between
    // "all fixed" and "all streaming" has a local minimum at each end.
    const Fit a = nested(s, shape, min_dur, best);
    const Fit b = nested(s, shape, min_dur, closed_form(s, weight, shape, std::clamp(base.fixed_ns, 0.0, min_dur)));
    best = a.cost <= b.cost ? a : b;
  }
  double rms = rms_of(best);
  // When the samples barely tell fixed time from streaming time (similar sizes, tiny
  // transfers), keep the base's fixed time unless the best split is better by more
  // than the clock's resolution.
  Fit anchored;
  anchored.fixed = std::clamp(base.fixed_ns, 0.0, min_dur);
  if (streams) {
    anchored.scale = minimize_1d([&](double scale) { return squared_error(s, shape, anchored.fixed, scale); },
                                 0.5 * best.scale, std::max(2.0 * best.scale, 0.5), 6, 16);
  } else {
    anchored = closed_form(s, weight, shape, anchored.fixed);
  }
  const double anchored_rms = rms_of(anchored);
  if (anchored_rms <= rms + 0.5) {
    best = anchored;
    rms = anchored_rms;
  }
  out.fixed_ns = best.fixed;
  out.bytes_scale = best.scale;
  out.rms_error_ns = rms;
  return out;
}

}  // namespace mpk
