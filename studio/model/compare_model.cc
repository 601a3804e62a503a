// Two runs compared: their statistics and a table of deltas.
#include "studio/model/compare_model.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "studio/model/loop_costs.h"

namespace mpk::studio {

int DeltaRow::better() const {
  if (unit == DeltaUnit::kCount || std::fabs(relative()) < 0.005) return 0;
  const bool b_better = unit == DeltaUnit::kRatio ? delta() > 0 : delta() < 0;
  return b_better ? 1 : -1;
}

int64_t CompareModel::duration_ns() const {
  return std::max(a_.run.duration_ns, b_.run.duration_ns);
}

CompareModel::CompareModel(const TraceReader& reader_a, int64_t run_a,
                           const TraceReader& reader_b, int64_t run_b, CompareSide load)
    : a_(compute_stats(reader_a, run_a)),
      b_(compute_stats(reader_b, run_b)),
      loaded_(load),
      model_(load == CompareSide::kA ? std::make_unique<TraceModel>(reader_a, run_a)
                                     : std::make_unique<TraceModel>(reader_b, run_b)) {
  auto add = [&](const std::string& group, const std::string& label, double a, double b,
                 DeltaUnit unit) { deltas_.push_back({group, label, a, b, unit}); };
  add("step", "makespan per step (median)", a_.median_step_ns, b_.median_step_ns, DeltaUnit::kNs);
  add("step", "makespan per step (mean)", a_.mean_step_ns, b_.mean_step_ns, DeltaUnit::kNs);
  add("step", "steps", static_cast<double>(a_.steps.size()), static_cast<double>(b_.steps.size()),
      DeltaUnit::kCount);
  add("step", "utilization", a_.utilization, b_.utilization, DeltaUnit::kRatio);
  add("step", "busy time", static_cast<double>(a_.busy_ns), static_cast<double>(b_.busy_ns),
      DeltaUnit::kNs);
  for (size_t c = 0; c < a_.bubble_ns.size(); ++c)
    add("idle", name_of(static_cast<BubbleCause>(c)), static_cast<double>(a_.bubble_ns[c]),
        static_cast<double>(b_.bubble_ns[c]), DeltaUnit::kNs);
  add("idle", "wait: producer running", static_cast<double>(a_.wait_running_ns),
      static_cast<double>(b_.wait_running_ns), DeltaUnit::kNs);
  add("idle", "wait: after release", static_cast<double>(a_.wait_released_ns),
      static_cast<double>(b_.wait_released_ns), DeltaUnit::kNs);
  // Kinds of either run, by the larger of the two totals.
  std::map<std::string, std::pair<int64_t, int64_t>> kinds;
  for (const KindTime& k : a_.kinds) kinds[k.kind].first = k.total_ns;
  for (const KindTime& k : b_.kinds) kinds[k.kind].second = k.total_ns;
  std::vector<std::pair<std::string, std::pair<int64_t, int64_t>>> ordered(kinds.begin(), kinds.end());
  std::stable_sort(ordered.begin(), ordered.end(), [](const auto& x, const auto& y) {
    return std::max(x.second.first, x.second.second) > std::max(y.second.first, y.second.second);
  });
  for (const auto& [kind, t] : ordered)
    add("kind", kind, static_cast<double>(t.first), static_cast<double>(t.second), DeltaUnit::kNs);
  add("critical path", "length (median step)", static_cast<double>(a_.path_busy_ns + a_.path_gap_ns),
      static_cast<double>(b_.path_busy_ns + b_.path_gap_ns), DeltaUnit::kNs);
  add("critical path", "tasks", static_cast<double>(a_.path_tasks), static_cast<double>(b_.path_tasks),
      DeltaUnit::kCount);
  add("critical path", "busy", static_cast<double>(a_.path_busy_ns),
      static_cast<double>(b_.path_busy_ns), DeltaUnit::kNs);
  add("critical path", "waits and latency", static_cast<double>(a_.path_gap_ns),
      static_cast<double>(b_.path_gap_ns), DeltaUnit::kNs);
}

std::string describe_run(const RunRecord& r) {
  std::string s = "run " + std::to_string(r.id) + ": " + r.kind;
  if (!r.policy.empty()) s += " " + r.policy;
  if (!r.model.empty()) s += " (" + r.model + ")";
  return s;
}

std::string costs_of(const RunRecord& r) {
  const std::optional<std::string> c = simulated_costs(r);
  return c ? "costs: " + *c : "";
}

}  // namespace mpk::studio
