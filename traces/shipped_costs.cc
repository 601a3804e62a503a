// The cost model a simulation uses: a given file, a shipped calibration, or the machine
// model's.
#include "traces/shipped_costs.h"

#include <string_view>

namespace mpk {

CostParams simulation_costs(const MachineModel& m, const std::string& costs_file,
                            std::string* used, const std::vector<ShippedCosts>& table) {
  const CostParams machine = CostParams::from_machine(m);
  if (!costs_file.empty()) {
    if (used) *used = "cost file " + costs_file;
    return load_cost_params(costs_file, machine);
  }
  for (const ShippedCosts& s : table) {
    if (m.name != s.machine) continue;
    CostParams p = parse_cost_params(s.json, std::string("shipped calibration ") + s.file, machine);
    if (used) *used = std::string("shipped calibration ") + s.file + (p.note.empty() ? "" : " (" + p.note + ")");
    return p;
  }
  if (used) *used = "machine model";
  return machine;
}

namespace {
constexpr std::string_view kShipped = "shipped:";
}  // namespace

std::string recorded_costs(const MachineModel& m, const std::string& costs_file) {
  if (!costs_file.empty()) return costs_file;
  for (const ShippedCosts& s : shipped_costs())
    if (m.name == s.machine) return std::string(kShipped) + s.file;
  return "machine-model";
}

std::string shipped_file(const std::string& recorded) {
  return recorded.rfind(kShipped, 0) == 0 ? recorded.substr(kShipped.size()) : "";
}

}  // namespace mpk
