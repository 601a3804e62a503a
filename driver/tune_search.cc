// The tune search: a tree-structured Parzen estimator with local moves, then the
// finalists compiled, verified and simulated longer.
#include "driver/tune_search.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <set>

#include "ir/error.h"
#include "traces/calibrate.h"
#include "traces/simulator.h"
#ifdef MPK_DRIVER_WITH_GPU
#include "codegen/megakernel.h"
#endif

namespace mpk {
namespace {

using Clock = std::chrono::steady_clock;

constexpr double kGoodShare = 0.25;      // the best quarter are "good"
constexpr int kSamplesPerProposal = 64;
constexpr int kLocalEvery = 4;           // every fourth proposal is a local move
constexpr double kFinalistShare = 0.15;  // of a time budget, kept for the finalists
constexpr double kFinalistMargin = 1.05; // finalists: within 5 % of the default or better
constexpr int kStartChanges = 3;         // a start point changes 1..3 settings of the default

class Search {
 public:
  Search(const TuneSpace& space, TuneCompiler& compiler, const TuneSettings& s, const TuneProgress& progress)
      : space_(space), compiler_(compiler), s_(s), progress_(progress), rng_(s.seed), t0_(Clock::now()) {}

  TuneResult run() {
    evaluate(default_point(space_), "default");
    if (!std::isfinite(r_.candidates[0].step_ns))
      throw Error("tune: the default pipeline does not simulate: " + r_.candidates[0].error);
    const size_t start_size = std::max<size_t>(8, space_.dims.size());
    for (int misses = 0; searching() && misses < 200;) {
      const size_t n = r_.candidates.size();
      const TunePoint p = n < start_size ? start_point()
                          : n % kLocalEvery == 0 ? local_point()
                                                 : model_point();
      const char* how = n < start_size ? "start" : n % kLocalEvery == 0 ? "local" : "model";
      misses = evaluate(p, how) ? 0 : misses + 1;  // a point seen before costs nothing
    }
    finalists();
    r_.seconds = elapsed();
    return r_;
  }

 private:
  double elapsed() const { return std::chrono::duration<double>(Clock::now() - t0_).count(); }

  bool searching() const {
    if (s_.max_candidates > 0 && static_cast<int64_t>(r_.candidates.size()) >= s_.max_candidates) return false;
    return s_.max_seconds <= 0 || elapsed() < (1 - kFinalistShare) * s_.max_seconds;
  }

  // Simulates the candidate at `p` unless its pipeline was seen; false when it was.
  bool evaluate(const TunePoint& p, const char* how) {
    TuneCandidate c;
    c.point = p;
    const Pipeline pipeline = pipeline_of(space_, p);
    c.pipeline = print_pipeline(pipeline);
    if (!seen_.insert(c.pipeline).second) return false;
    c.options = describe_point(space_, p);
    c.how = how;
    try {
      const Module m = compiler_.schedule(pipeline);
      c.tasks = static_cast<int64_t>(m.graph.tasks.size());
      c.step_ns = mean_step_ns(simulate(m, s_.costs, s_.search_steps), s_.search_steps);
    } catch (const Error& e) {
      c.error = e.what();
    }
    r_.candidates.push_back(std::move(c));
    if (progress_) progress_(r_, "search");
    return true;
  }

  int32_t uniform(size_t n) { return static_cast<int32_t>(std::uniform_int_distribution<size_t>(0, n - 1)(rng_)); }

  // The default with 1 to kStartChanges settings set at random: the start explores the
  // neighbourhood of a schedule known to be sound, where uniform points over twenty-odd
  // settings are almost all far worse.
  TunePoint start_point() {
    TunePoint p = default_point(space_);
    const int changes = 1 + uniform(kStartChanges);
    for (int k = 0; k < changes; ++k) {
      const size_t d = static_cast<size_t>(uniform(space_.dims.size()));
      p[d] = uniform(space_.dims[d].values.size());
    }
    return p;
  }

  // Indices of the feasible candidates, fastest first.
  std::vector<size_t> ranked() const {
    std::vector<size_t> order;
    for (size_t i = 0; i < r_.candidates.size(); ++i)
      if (std::isfinite(r_.candidates[i].step_ns)) order.push_back(i);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return r_.candidates[a].step_ns < r_.candidates[b].step_ns;
    });
    return order;
  }

  // Per dimension and value, how often the `members` chose it (where it was active): 1
  // for the value, half for its neighbours on a ladder, plus one for every value.
  std::vector<std::vector<double>> frequencies(const std::vector<size_t>& members) const {
    std::vector<std::vector<double>> f;
    for (size_t d = 0; d < space_.dims.size(); ++d) {
      const TuneDimension& dim = space_.dims[d];
      std::vector<double> w(dim.values.size(), 1.0);
      for (size_t i : members) {
        const TunePoint& p = r_.candidates[i].point;
        if (!dimension_active(space_, p, d)) continue;
        const auto v = static_cast<size_t>(p[d]);
        w[v] += 1;
        if (dim.ordered() && v >= dim.ladder_begin) {
          if (v > dim.ladder_begin) w[v - 1] += 0.5;
          if (v + 1 < dim.values.size()) w[v + 1] += 0.5;
        }
      }
      double sum = 0;
      for (double x : w) sum += x;
      for (double& x : w) x /= sum;
      f.push_back(std::move(w));
    }
    return f;
  }

  TunePoint model_point() {
    const std::vector<size_t> order = ranked();
    const size_t n_good = std::max<size_t>(2, static_cast<size_t>(std::ceil(kGoodShare * order.size())));
    std::vector<size_t> good(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(std::min(n_good, order.size())));
    std::vector<size_t> bad;
    for (size_t i = 0; i < r_.candidates.size(); ++i)
      if (std::find(good.begin(), good.end(), i) == good.end()) bad.push_back(i);
    const auto l = frequencies(good), g = frequencies(bad);
    TunePoint best;
    double best_score = -1e300;
    for (int k = 0; k < kSamplesPerProposal; ++k) {
      TunePoint p = default_point(space_);
      double score = 0;
      for (size_t d = 0; d < space_.dims.size(); ++d) {
        std::discrete_distribution<int32_t> pick(l[d].begin(), l[d].end());
        p[d] = pick(rng_);
        if (dimension_active(space_, p, d)) score += std::log(l[d][static_cast<size_t>(p[d])] / g[d][static_cast<size_t>(p[d])]);
      }
      if (seen_.count(print_pipeline(pipeline_of(space_, p)))) continue;
      if (score > best_score) best_score = score, best = p;
    }
    return best.empty() ? start_point() : best;
  }

  TunePoint local_point() {
    const std::vector<size_t> order = ranked();
    TunePoint p = r_.candidates[order.empty() ? 0 : order.front()].point;
    std::vector<size_t> active;
    for (size_t d = 0; d < space_.dims.size(); ++d)
      if (dimension_active(space_, p, d)) active.push_back(d);
    const int moves = 1 + uniform(2);
    for (int m = 0; m < moves && !active.empty(); ++m) {
      const size_t d = active[static_cast<size_t>(uniform(active.size()))];
      const TuneDimension& dim = space_.dims[d];
      const auto v = static_cast<size_t>(p[d]);
      if (dim.ordered() && v >= dim.ladder_begin) {
        const bool up = v + 1 < dim.values.size() && (v == dim.ladder_begin || uniform(2) == 1);
        p[d] = static_cast<int32_t>(up ? v + 1 : v > dim.ladder_begin ? v - 1 : v);
      } else {
        p[d] = uniform(dim.values.size());
      }
    }
    return p;
  }

  // The fastest candidates and the default, compiled and verified as `mpk run` would,
  // checked by the megakernel generator, and simulated for final_steps.
  void finalists() {
    std::vector<size_t> picks = ranked();
    std::erase_if(picks, [&](size_t i) {
      return r_.candidates[i].step_ns > kFinalistMargin * r_.candidates[0].step_ns;
    });
    if (picks.size() > static_cast<size_t>(s_.finalists)) picks.resize(static_cast<size_t>(s_.finalists));
    if (std::find(picks.begin(), picks.end(), size_t{0}) == picks.end()) picks.push_back(0);
    double best = std::numeric_limits<double>::infinity();
    for (size_t i : picks) {
      TuneCandidate& c = r_.candidates[i];
      c.finalist = true;
      try {
        const Module m = compiler_.verified(parse_pipeline(c.pipeline));
#ifdef MPK_DRIVER_WITH_GPU
        generate_megakernel(m);  // the GPU can run it
#endif
        c.final_step_ns = mean_step_ns(simulate(m, s_.costs, s_.final_steps), s_.final_steps);
      } catch (const Error& e) {
        c.error = e.what();
        if (i == 0) throw Error("tune: the default pipeline fails its final check: " + c.error);
      }
      if (c.final_step_ns >= 0 && c.final_step_ns < best) best = c.final_step_ns, r_.best = i;
      if (progress_) progress_(r_, "finalists");
    }
  }

  const TuneSpace& space_;
  TuneCompiler& compiler_;
  const TuneSettings& s_;
  const TuneProgress& progress_;
  std::mt19937_64 rng_;
  Clock::time_point t0_;
  TuneResult r_;
  std::set<std::string> seen_;
};

}  // namespace

TuneResult run_tune(const TuneSpace& space, TuneCompiler& compiler, const TuneSettings& settings,
                    const TuneProgress& progress) {
  return Search(space, compiler, settings, progress).run();
}

}  // namespace mpk
