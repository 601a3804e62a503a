// Scheduling policies for assign-sm, as plugins. A policy turns a task graph with its
// events and a machine model into one ordered task list per worker. Adding a policy is
// one file defining its PolicyInfo, plus one line in passes/policies/registry.cc.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ir/module.h"
#include "passes/pass.h"

namespace mpk {

// Bounds of the policies' float options (PassManager checks them): a GPU event's latency is
// about a microsecond, a second is far beyond any machine; a task spends at most a
// thousand times its slack to stay local.
inline constexpr double kMaxEventLatencyNs = 1e9;
inline constexpr double kMaxSlackScale = 1e3;

struct PolicyOutput {
  std::vector<std::vector<TaskId>> workers;  // one ordered list per worker
  Attrs params;  // the policy's resolved parameters, recorded in Schedule.params
};

// Schedules `graph` on `workers` workers. The lists must hold every task exactly once
// and be deadlock-free: listing tasks in an order consistent with the distance-0
// events (as list scheduling does) guarantees it. assign-sm checks both.
using ScheduleFn = std::function<PolicyOutput(const TaskGraph& graph,
                                              const MachineModel& machine, int32_t workers)>;

struct PolicyInfo {
  std::string name;  // kebab-case, the value of assign-sm's `policy` option
  std::string summary;
  std::vector<PassOptionInfo> options;  // this policy's own assign-sm options
  // Receives only options listed in policy_options(); throws mpk::Error for a malformed
  // value.
  std::function<ScheduleFn(const PassOptions&)> configure;
  // A policy that runs another one first (pinned) names the option that selects it;
  // "" for the others. all_policies() fills that option's choices (every policy without
  // a base), and the chosen base policy's own options are accepted and passed on.
  std::string base_option;
};

// The policy assign-sm and `mpk run` use when none is named.
inline constexpr const char* kDefaultPolicy = "critical-path";

const std::vector<PolicyInfo>& all_policies();
// nullptr when unknown.
const PolicyInfo* find_policy(const std::string& name);
// "round-robin, critical-path, locality, pinned".
std::string known_policies();
// The assign-sm options `policy` takes, given the options chosen so far: its own, and
// for a policy with a base, the base policy's (the one `options` names, else the base
// option's default).
std::vector<PassOptionInfo> policy_options(const PolicyInfo& policy, const PassOptions& options);

// Each policy file defines one of these.
PolicyInfo round_robin_policy_info();
PolicyInfo critical_path_policy_info();
PolicyInfo locality_policy_info();
PolicyInfo pinned_policy_info();  // passes/policies/pinned.h

}  // namespace mpk
