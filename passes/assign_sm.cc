// assign-sm: turns a task graph with events into a Schedule (one ordered task list per
// worker) with a pluggable policy (passes/policies/), checks that the result lists
// every task once and cannot deadlock, and records the policy and its parameters.
#include <algorithm>

#include "ir/error.h"
#include "passes/policies/policy.h"
#include "passes/policies/step_graph.h"
#include "passes/registry.h"

namespace mpk {
namespace {

constexpr int64_t kMaxWorkers = 65536;

std::string option_names(const std::vector<PassOptionInfo>& options) {
  if (options.empty()) return "it takes none";
  std::string s = "its options:";
  for (const PassOptionInfo& o : options) s += " " + o.name;
  return s;
}

class AssignSmPass : public Pass {
 public:
  AssignSmPass(const PolicyInfo& policy, ScheduleFn schedule, int64_t workers)
      : policy_(policy), schedule_(std::move(schedule)), workers_(workers) {}

  PassResult run(Module& m) override {
    TaskGraph& g = m.graph;
    if (g.tasks.empty()) return PassResult::failure("the module has no tasks (run decompose first)");
    const int64_t workers = workers_ > 0 ? workers_ : m.machine.sm_count;
    if (workers < 1 || workers > kMaxWorkers)
      return PassResult::failure("the machine model has " + std::to_string(workers) +
                                 " SMs; give workers=N");
    if (workers > m.machine.sm_count)
      return PassResult::failure("workers=" + std::to_string(workers) + " is more than machine '" +
                                 m.machine.name + "' has SMs (" +
                                 std::to_string(m.machine.sm_count) + ")");
    PolicyOutput out;
    try {
      out = schedule_(g, m.machine, static_cast<int32_t>(workers));
      if (static_cast<int64_t>(out.workers.size()) != workers)
        throw Error("it returned " + std::to_string(out.workers.size()) + " worker lists for " +
                    std::to_string(workers) + " workers");
      // Throws when a task is missing or listed twice, or when the lists can deadlock.
      simulate_schedule(StepGraph(g), out.workers, std::vector<double>(g.tasks.size(), 0), 0);
    } catch (const Error& e) {
      return PassResult::failure("policy '" + policy_.name + "': " + e.what());
    }
    Schedule s;
    s.policy = policy_.name;
    s.params = std::move(out.params);
    s.params["workers"] = workers;
    s.workers = std::move(out.workers);
    const bool changed = s.policy != g.schedule.policy || s.params != g.schedule.params ||
                         s.workers != g.schedule.workers;
    g.schedule = std::move(s);
    return PassResult::ok(changed);
  }

 private:
  const PolicyInfo& policy_;
  ScheduleFn schedule_;
  int64_t workers_;  // 0: the machine's SM count
};

}  // namespace

PassInfo assign_sm_pass_info() {
  PassInfo info;
  info.name = "assign-sm";
  info.summary = "schedule tasks onto workers (one per SM) with a policy: " + known_policies();
  std::vector<std::string> policies;
  for (const PolicyInfo& p : all_policies()) policies.push_back(p.name);
  info.options = {
      PassOptionInfo::choice("policy", kDefaultPolicy, "scheduling policy: " + known_policies(),
                             policies),
      PassOptionInfo::integer("workers", "", "number of workers (default: the machine's SM count)",
                              1, static_cast<double>(kMaxWorkers)),
  };
  // Every policy's options; each is accepted only with a policy that has it (or whose
  // base policy has it).
  for (const PolicyInfo& p : all_policies())
    for (const PassOptionInfo& o : p.options) {
      auto it = std::find_if(info.options.begin(), info.options.end(),
                             [&](const PassOptionInfo& x) { return x.name == o.name; });
      if (it == info.options.end()) {
        info.options.push_back(o);
        info.options.back().help += " [" + p.name + "]";
      } else {
        it->help.insert(it->help.size() - 1, ", " + p.name);
      }
    }
  info.create = [](const PassOptions& o) -> std::unique_ptr<Pass> {
    const std::string name = option_str(o, "policy", kDefaultPolicy);
    const PolicyInfo* policy = find_policy(name);
    if (!policy)
      throw Error("pass 'assign-sm': unknown policy '" + name + "' (known: " +
                  known_policies() + ")");
    const int64_t workers = option_int(o, "assign-sm", "workers", 0);
    if (o.count("workers") && (workers < 1 || workers > kMaxWorkers))
      throw Error("pass 'assign-sm': option 'workers' must be between 1 and " +
                  std::to_string(kMaxWorkers) + ", got " + o.at("workers"));
    PassOptions own;
    for (const auto& [key, value] : o)
      if (key != "policy" && key != "workers") own.emplace(key, value);
    const std::vector<PassOptionInfo> accepted = policy_options(*policy, own);
    for (const auto& entry : own) {
      const std::string& key = entry.first;
      const bool known = std::any_of(accepted.begin(), accepted.end(),
                                     [&](const PassOptionInfo& x) { return x.name == key; });
      if (!known)
        throw Error("pass 'assign-sm': option '" + key + "' does not apply to policy '" + name +
                    "' (" + option_names(accepted) + ")");
    }
    return std::make_unique<AssignSmPass>(*policy, policy->configure(own), workers);
  };
  return info;
}

}  // namespace mpk
