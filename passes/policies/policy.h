// Scheduling policies for assign-sm, as plugins. A policy turns a task graph with its
// events, its index and the cost model into one ordered task list per worker. Adding a policy is
// one file defining its PolicyInfo (options typed in passes/options.h) and registering
// it with one line, MPK_POLICY(its_info_function).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ir/cost_params.h"
#include "ir/module.h"
#include "ir/task_graph_index.h"
#include "passes/options.h"

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

// What a policy schedules: a graph with its index (built once, by assign-sm), the
// machine, the cost model to plan with (the machine's, or assign-sm's costs= file over
// it; a task's estimate shares the bandwidth among machine.sm_count SMs) and how many
// workers to fill.
struct ScheduleRequest {
  const TaskGraph& graph;
  const TaskGraphIndex& index;
  const MachineModel& machine;
  const CostParams& costs;
  int32_t workers = 0;
};

// Schedules `graph` on `workers` workers. The lists must hold every task exactly once
// and be deadlock-free: listing tasks in an order consistent with the distance-0
// events (as list scheduling does) guarantees it. assign-sm checks both.
using ScheduleFn = std::function<PolicyOutput(const ScheduleRequest& request)>;

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

// Every registered policy, sorted by name.
const std::vector<PolicyInfo>& all_policies();
// nullptr when unknown.
const PolicyInfo* find_policy(const std::string& name);
// "critical-path, locality, pinned, round-robin".
std::string known_policies();
// The assign-sm options `policy` takes, given the options chosen so far: its own, and
// for a policy with a base, the base policy's (the one `options` names, else the base
// option's default).
std::vector<PassOptionInfo> policy_options(const PolicyInfo& policy, const PassOptions& options);

// Registers a policy; MPK_POLICY calls it at start-up.
bool register_policy(PolicyInfo (*make)());

// A PolicyInfo whose options are `schema` and whose schedule `configure` builds from
// the parsed options struct.
template <class Opts, class Configure>
PolicyInfo typed_policy_info(std::string name, std::string summary, OptionSchema<Opts> schema,
                             Configure configure) {
  PolicyInfo info;
  info.name = std::move(name);
  info.summary = std::move(summary);
  info.options = schema.infos();
  info.configure = [schema = std::move(schema), configure](const PassOptions& o) -> ScheduleFn {
    return configure(schema.parse(o, "assign-sm"));
  };
  return info;
}

}  // namespace mpk

// In a policy's file: MPK_POLICY(locality_policy_info); where `PolicyInfo locality_policy_info()`.
#define MPK_POLICY(make) \
  [[maybe_unused]] static const bool mpk_policy_registered_##make = ::mpk::register_policy(make)
