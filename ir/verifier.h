// The layered verifier. Each layer returns diagnostics naming the rule broken:
//   structure: ids resolve, names unique, regions inside tensor bounds, dtypes and
//              shapes consistent per operator kind, event targets == producer counts;
//   graph:     the event graph (step_distance 0) is acyclic, and every read of a region
//              that an earlier task writes is ordered after it by events;
//              every task is scheduled exactly once (when there is a schedule);
//   schedule:  deadlock freedom: step_distance-0 dependency edges plus same-worker
//              order edges form no cycle.
#pragma once

#include <string>
#include <vector>

#include "ir/module.h"

namespace mpk {

struct Diagnostic {
  std::string rule;     // e.g. "structure.region-out-of-bounds", "schedule.deadlock"
  std::string message;  // one line naming the objects involved
};

std::vector<Diagnostic> verify_structure(const Module& m);
std::vector<Diagnostic> verify_graph(const Module& m);     // no-op without tasks
std::vector<Diagnostic> verify_schedule(const Module& m);  // no-op without a schedule

// All layers, each only if the previous ones passed.
std::vector<Diagnostic> verify_module(const Module& m);

// Throws mpk::Error("verifier: <rule>: <message>" for the first few diagnostics).
void verify_or_throw(const Module& m);

}  // namespace mpk
