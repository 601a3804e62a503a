// Model error against recorded runs, leave-one-pair-out validation, rankings.
#include "traces/model_error.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "ir/error.h"
#include "traces/simulator.h"

namespace mpk {
namespace {

double quantile(std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(i), v.end());
  return v[i];
}

std::vector<Execution> simulate_run(const CalibrationRun& r, const CostParams& costs) {
  try {
    return simulate(r.module, costs, r.steps);
  } catch (const Error& e) {
    throw Error(r.label + ": " + e.what());
  }
}

using PairKey = std::pair<std::string, std::string>;  // (model, policy)

}  // namespace

ModelError model_error(const std::vector<CalibrationRun>& runs, const CostParams& costs) {
  ModelError out;
  std::vector<std::vector<double>> rel(kNumTaskKinds);
  std::vector<double> measured(kNumTaskKinds, 0), simulated(kNumTaskKinds, 0);
  for (const CalibrationRun& r : runs) {
    const std::vector<Execution> sim = simulate_run(r, costs);
    const size_t steps = static_cast<size_t>(std::max(r.steps, 1));
    std::vector<int64_t> dur(r.module.graph.tasks.size() * steps, -1);
    for (const Execution& e : sim) dur[static_cast<size_t>(e.task) * steps + static_cast<size_t>(e.step)] = e.end_ns - e.start_ns;
    for (const Execution& e : r.executions) {
      const int64_t s = dur[static_cast<size_t>(e.task) * steps + static_cast<size_t>(e.step)];
      const double m = static_cast<double>(e.end_ns - e.start_ns);
      if (s < 0 || m <= 0) continue;
      const size_t k = static_cast<size_t>(r.module.graph.tasks[static_cast<size_t>(e.task)].kind);
      rel[k].push_back(std::fabs(static_cast<double>(s) - m) / m);
      measured[k] += m;
      simulated[k] += static_cast<double>(s);
    }
    out.runs.push_back({r.label, r.model, r.policy, mean_step_ns(r.executions, r.steps),
                        mean_step_ns(sim, r.steps)});
  }
  for (int k = 0; k < kNumTaskKinds; ++k) {
    std::vector<double>& v = rel[static_cast<size_t>(k)];
    if (v.empty()) continue;
    KindError e;
    e.kind = static_cast<TaskKind>(k);
    e.samples = static_cast<int64_t>(v.size());
    e.measured_mean_ns = measured[static_cast<size_t>(k)] / static_cast<double>(v.size());
    e.simulated_mean_ns = simulated[static_cast<size_t>(k)] / static_cast<double>(v.size());
    e.median = quantile(v, 0.5);
    e.p90 = quantile(v, 0.9);
    out.kinds.push_back(e);
  }
  return out;
}

std::vector<PairPrediction> leave_one_pair_out(const std::vector<CalibrationRun>& runs,
                                               const CostParams& base) {
  std::map<PairKey, std::vector<size_t>> pairs;
  for (size_t i = 0; i < runs.size(); ++i) pairs[{runs[i].model, runs[i].policy}].push_back(i);
  if (pairs.size() < 2)
    throw Error("validation needs runs of at least two (model, policy) pairs, got " +
                std::to_string(pairs.size()));
  std::vector<PairPrediction> out;
  for (const auto& [key, members] : pairs) {
    std::vector<CalibrationRun> train, test;
    for (size_t i = 0; i < runs.size(); ++i)
      (std::find(members.begin(), members.end(), i) != members.end() ? test : train).push_back(runs[i]);
    const Calibration cal = calibrate(train, base);
    PairPrediction p;
    p.runs = static_cast<int64_t>(test.size());
    p.prediction.model = key.first;
    p.prediction.policy = key.second;
    p.prediction.label = std::to_string(test.size()) + (test.size() == 1 ? " run" : " runs");
    for (const RunPrediction& r : model_error(test, cal.params).runs) {
      p.prediction.measured_step_ns += r.measured_step_ns / static_cast<double>(test.size());
      p.prediction.predicted_step_ns += r.predicted_step_ns / static_cast<double>(test.size());
    }
    out.push_back(p);
  }
  return out;
}

std::vector<Ranking> rankings(const std::vector<PairPrediction>& pairs) {
  std::map<std::string, std::vector<const RunPrediction*>> by_model;
  for (const PairPrediction& p : pairs) by_model[p.prediction.model].push_back(&p.prediction);
  std::vector<Ranking> out;
  for (const auto& entry : by_model) {
    const std::vector<const RunPrediction*>& list = entry.second;  // a lambda captures it
    Ranking r;
    r.model = entry.first;
    auto order = [&](auto key) {
      std::vector<const RunPrediction*> v = list;
      std::stable_sort(v.begin(), v.end(), [&](const RunPrediction* a, const RunPrediction* b) { return key(a) < key(b); });
      std::vector<std::string> names;
      for (const RunPrediction* x : v) names.push_back(x->policy);
      return names;
    };
    r.measured = order([](const RunPrediction* x) { return x->measured_step_ns; });
    r.predicted = order([](const RunPrediction* x) { return x->predicted_step_ns; });
    for (const std::string& policy : r.measured)
      for (const RunPrediction* x : list)
        if (x->policy == policy) r.measured_ns.push_back(x->measured_step_ns);
    out.push_back(r);
  }
  return out;
}

bool Ranking::same() const {
  auto place = [&](const std::string& p) {
    return std::find(predicted.begin(), predicted.end(), p) - predicted.begin();
  };
  for (size_t i = 0; i < measured.size(); ++i)
    for (size_t j = i + 1; j < measured.size(); ++j)
      if (measured_ns[j] > measured_ns[i] * (1 + kRankingTie) && place(measured[i]) > place(measured[j]))
        return false;
  return true;
}

std::string Ranking::measured_text() const {
  std::string s;
  for (size_t i = 0; i < measured.size(); ++i) {
    if (i > 0) s += measured_ns[i] > measured_ns[i - 1] * (1 + kRankingTie) ? " < " : " = ";
    s += measured[i];
  }
  return s;
}

}  // namespace mpk
