// Cost model resolution for the optimizer loop: the run's own, the machine model or a file.
#include "studio/model/loop_costs.h"

#include <filesystem>
#include <sstream>

#include "ir/error.h"
#include "studio/model/store_target.h"
#include "traces/shipped_costs.h"

namespace mpk::studio {

std::optional<std::string> simulated_costs(const RunRecord& r) {
  if (r.kind != "sim") return std::nullopt;
  std::istringstream words(r.options);
  std::string w;
  while (words >> w)
    if (w.rfind("costs=", 0) == 0) return w.substr(6);
  return std::string("machine-model");  // what the simulator uses without a file
}

bool simulates_under(const RunRecord& r, const std::string& recorded, int64_t steps) {
  const std::optional<std::string> costs = simulated_costs(r);
  if (!costs || r.steps != steps) return false;
  return default_costs(*costs) ? default_costs(recorded) : *costs == recorded;
}

JobCosts resolve_costs(const CostChoice& choice, const RunRecord& r,
                       const std::map<int64_t, std::string>& calibrated, const std::string& input) {
  namespace fs = std::filesystem;
  JobCosts c;
  const std::string run = "run " + std::to_string(r.id);
  switch (choice.source) {
    case CostSource::kMachineModel:
      c.label = "the machine's own costs (its shipped calibration, if it has one)";
      return c;
    case CostSource::kFile:
      if (choice.file.empty() || !fs::is_regular_file(choice.file))
        throw Error("cost file '" + choice.file + "' does not exist (pick one, e.g. from mpk calibrate)");
      c.path = fs::absolute(choice.file).string();
      c.label = "cost file " + choice.file;
      return c;
    case CostSource::kRun:
      break;
  }
  if (const std::optional<std::string> costs = simulated_costs(r)) {
    if (!default_costs(*costs)) c.path = *costs;
    c.label = "the costs " + run + " was simulated with (" +
              (*costs == "machine-model" ? "the machine model" : c.path.empty() ? "shipped calibration " + shipped_file(*costs) : c.path) + ")";
    return c;
  }
  if (r.kind != "gpu") {
    c.label = "the machine model (" + run + " ran on the " + r.kind + ", whose times do not calibrate it)";
    return c;
  }
  if (auto it = calibrated.find(r.id); it != calibrated.end() && fs::is_regular_file(it->second)) {
    c.path = it->second;
  } else {
    c.path = fs::absolute(side_path(input, ".studio.run" + std::to_string(r.id) + "-costs.json")).string();
    c.calibrate = true;
  }
  c.label = "costs calibrated from " + run + " (gpu): " + c.path;
  return c;
}

}  // namespace mpk::studio
