// Module summary.
#include "passes/summary.h"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "ir/task_graph_index.h"
#include "passes/policies/timing_model.h"

namespace mpk {
namespace {

std::string format_ns(double ns) {
  char buf[64];
  if (ns >= 1e6)
    std::snprintf(buf, sizeof buf, "%.3f ms", ns * 1e-6);
  else
    std::snprintf(buf, sizeof buf, "%.1f us", ns * 1e-3);
  return buf;
}

std::string format_bytes(int64_t b) {
  char buf[64];
  const double v = static_cast<double>(b);
  if (v >= 1e9)
    std::snprintf(buf, sizeof buf, "%.2f GB", v * 1e-9);
  else if (v >= 1e6)
    std::snprintf(buf, sizeof buf, "%.2f MB", v * 1e-6);
  else
    std::snprintf(buf, sizeof buf, "%.1f kB", v * 1e-3);
  return buf;
}

}  // namespace

ModuleSummary summarize(const Module& m) {
  ModuleSummary s;
  const TaskGraph& g = m.graph;
  s.operators = static_cast<int64_t>(m.program.ops.size());
  s.tasks = static_cast<int64_t>(g.tasks.size());
  s.events = static_cast<int64_t>(g.events.size());
  for (const Event& e : g.events) s.cross_step_events += e.step_distance != 0;
  for (const Task& t : g.tasks) s.bytes_per_step += t.bytes;
  if (g.tasks.empty()) return s;

  const TaskGraphIndex index(g);
  index.require_valid();
  const CostParams costs = CostParams::from_machine(m.machine);
  const std::vector<double> cost = task_costs(g, costs, m.machine.sm_count);
  for (double l : bottom_levels(index, cost, costs.event_latency_ns))
    s.critical_path_ns = std::max(s.critical_path_ns, l);
  if (g.schedule.empty()) return s;

  s.policy = g.schedule.policy;
  s.workers = static_cast<int64_t>(g.schedule.workers.size());
  std::vector<int64_t> counts;
  for (const auto& list : g.schedule.workers) counts.push_back(static_cast<int64_t>(list.size()));
  std::sort(counts.begin(), counts.end());
  s.tasks_per_worker_min = counts.front();
  s.tasks_per_worker_median = counts[counts.size() / 2];
  s.tasks_per_worker_max = counts.back();
  s.makespan_ns =
      simulate_schedule(index, g.schedule.workers, cost, costs.event_latency_ns).makespan_ns;
  return s;
}

std::string format_summary(const ModuleSummary& s) {
  std::vector<std::pair<std::string, std::string>> rows;
  rows.emplace_back("operators", std::to_string(s.operators));
  if (s.tasks > 0) {
    rows.emplace_back("tasks", std::to_string(s.tasks));
    rows.emplace_back("events", std::to_string(s.events) + " (" +
                                    std::to_string(s.cross_step_events) + " cross-step)");
  }
  if (s.workers > 0) {
    rows.emplace_back("workers", std::to_string(s.workers) + " (" + s.policy + ")");
    rows.emplace_back("tasks/worker", "min " + std::to_string(s.tasks_per_worker_min) +
                                          ", median " + std::to_string(s.tasks_per_worker_median) +
                                          ", max " + std::to_string(s.tasks_per_worker_max));
  }
  if (s.tasks > 0) rows.emplace_back("critical path", format_ns(s.critical_path_ns) + " (est.)");
  if (s.workers > 0) rows.emplace_back("makespan", format_ns(s.makespan_ns) + " (est.)");
  if (s.tasks > 0) rows.emplace_back("bytes/step", format_bytes(s.bytes_per_step));
  size_t width = 0;
  for (const auto& [label, value] : rows) width = std::max(width, label.size());
  std::string out;
  for (const auto& [label, value] : rows)
    out += "  " + label + std::string(width - label.size() + 2, ' ') + value + "\n";
  return out;
}

}  // namespace mpk
