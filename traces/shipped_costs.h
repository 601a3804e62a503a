// Calibrations shipped with mpk: the default cost model of a machine model, fitted by
// `mpk calibrate` to GPU traces recorded on that machine (docs/simulator.md, "Shipped
// calibrations"). Each is a cost file under traces/costs/, named with its machine model
// on one line of MPK_SHIPPED_COSTS in traces/CMakeLists.txt, and compiled in.
#pragma once

#include <string>
#include <vector>

#include "ir/cost_params.h"
#include "ir/module.h"

namespace mpk {

struct ShippedCosts {
  const char* machine;  // the machine model's name, e.g. "H100-SXM"
  const char* file;     // its file under traces/costs/
  const char* json;     // the file's contents
};

// Every shipped calibration (generated from MPK_SHIPPED_COSTS).
const std::vector<ShippedCosts>& shipped_costs();

// The cost model a simulation of a module on machine `m` uses: `costs_file` over the
// machine model's costs when one is given; else the shipped calibration of m.name over
// them; else the machine model's. `used` (when given) receives what it was, for the
// run's output: "machine model", "shipped calibration h100-sxm.json (<its note>)" or
// "cost file <path>". Throws mpk::Error naming a file that does not
// read or a value out of bounds.
CostParams simulation_costs(const MachineModel& m, const std::string& costs_file,
                            std::string* used = nullptr,
                            const std::vector<ShippedCosts>& table = shipped_costs());

// How trace.db records the cost model of a simulation (the run option "costs=..."): the
// cost file's path, "shipped:<file>" for a shipped calibration, or "machine-model".
std::string recorded_costs(const MachineModel& m, const std::string& costs_file);
// The shipped file a recorded cost model names ("" for a cost file or the machine model).
std::string shipped_file(const std::string& recorded);
// True for a recorded cost model that is no cost file: what a simulation without one uses.
inline bool default_costs(const std::string& recorded) {
  return recorded == "machine-model" || !shipped_file(recorded).empty();
}

}  // namespace mpk
