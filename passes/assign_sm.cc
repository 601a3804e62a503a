// assign-sm: turns a task graph with events into a Schedule (one ordered task list per
// worker) with a pluggable policy (passes/policies/), planning with the cost model
// (ir/cost_params.h: the machine model's, or a cost file over it), checks that the
// result lists every task once and cannot deadlock (ir/deadlock.h), and records the
// policy and its parameters.
#include <algorithm>
#include <optional>

#include "ir/deadlock.h"
#include "ir/error.h"
#include "ir/task_graph_index.h"
#include "passes/policies/policy.h"

namespace mpk {
namespace {

constexpr int64_t kMaxWorkers = 65536;

std::string option_names(const std::vector<PassOptionInfo>& options) {
  if (options.empty()) return "it takes none";
  std::string s = "its options:";
  for (const PassOptionInfo& o : options) s += " " + o.name;
  return s;
}

// Throws mpk::Error when `lists` miss a task of g, list one twice or name one that does
// not exist, or when they can deadlock (naming the first worker that would block, its
// task and the event it would wait on forever).
void check_lists(const TaskGraphIndex& g, const std::vector<std::vector<TaskId>>& lists) {
  list_workers(g, lists, true);
  const WaitCheck check(g, list_order(g, lists));
  if (!check.deadlocks()) return;
  // The first stuck task of a list waits on a stuck event (the task before it is not
  // stuck); the first list that has one names it.
  for (size_t w = 0; w < lists.size(); ++w) {
    const auto t = std::find_if(lists[w].begin(), lists[w].end(), [&](TaskId u) { return check.stuck(u); });
    if (t == lists[w].end()) continue;
    for (EventId e : g.same_step_waits(*t))
      if (check.stuck_event(e))
        throw Error("the schedule can deadlock: worker " + std::to_string(w) + " blocks at task " +
                    std::to_string(*t) + " waiting on event " + std::to_string(e) + " (" +
                    std::to_string(check.stuck_tasks()) + " tasks can never start)");
  }
  throw Error("the schedule can deadlock: " + print_cycle(check.cycle()));
}

class AssignSmPass : public Pass {
 public:
  AssignSmPass(const PolicyInfo& policy, ScheduleFn schedule, int64_t workers, std::string costs)
      : policy_(policy), schedule_(std::move(schedule)), workers_(workers), costs_(std::move(costs)) {}

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
    CostParams costs;
    try {
      costs = CostParams::from_machine(m.machine);
    } catch (const Error& e) {
      return PassResult::failure(e.what());
    }
    try {
      if (!costs_.empty()) costs = load_cost_params(costs_, costs);
    } catch (const Error& e) {
      return PassResult::failure(std::string("option 'costs': ") + e.what());
    }
    PolicyOutput out;
    try {
      const TaskGraphIndex index(g);
      index.require_valid();
      out = schedule_(ScheduleRequest{g, index, m.machine, costs, static_cast<int32_t>(workers)});
      if (static_cast<int64_t>(out.workers.size()) != workers)
        throw Error("it returned " + std::to_string(out.workers.size()) + " worker lists for " +
                    std::to_string(workers) + " workers");
      check_lists(index, out.workers);
    } catch (const Error& e) {
      return PassResult::failure("policy '" + policy_.name + "': " + e.what());
    }
    Schedule s;
    s.policy = policy_.name;
    s.params = std::move(out.params);
    s.params["workers"] = workers;
    if (!costs_.empty()) s.params["costs"] = costs_;
    s.workers = std::move(out.workers);
    const bool changed = s.policy != g.schedule.policy || s.params != g.schedule.params ||
                         s.workers != g.schedule.workers;
    g.schedule = std::move(s);
    return PassResult::ok(changed);
  }

 private:
  const PolicyInfo& policy_;
  ScheduleFn schedule_;
  int64_t workers_;   // 0: the machine's SM count
  std::string costs_;  // a cost file, "" for the machine model's costs
};

struct AssignSmOptions {
  std::string policy = kDefaultPolicy;
  std::optional<int64_t> workers;  // unset: the machine's SM count
  std::string costs;               // "": the machine model's
};

PassInfo assign_sm_pass_info() {
  using O = AssignSmOptions;
  std::vector<std::string> policies;
  for (const PolicyInfo& p : all_policies()) policies.push_back(p.name);
  const auto schema =
      OptionSchema<O>()
          .choice("policy", &O::policy, "scheduling policy: " + known_policies(), policies)
          .integer("workers", &O::workers, "number of workers (default: the machine's SM count)", 1,
                   static_cast<double>(kMaxWorkers))
          .text("costs", &O::costs,
                "cost file to plan with (mpk calibrate's; default: the machine model's costs)");
  PassInfo info;
  info.name = "assign-sm";
  info.summary = "schedule tasks onto workers (one per SM) with a policy: " + known_policies();
  info.options = schema.infos();
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
  info.create = [schema](const PassOptions& o) -> std::unique_ptr<Pass> {
    PassOptions own, rest;
    for (const auto& [key, value] : o) (schema.declares(key) ? own : rest).emplace(key, value);
    const O a = schema.parse(own, "assign-sm");
    const PolicyInfo& policy = *find_policy(a.policy);
    const std::vector<PassOptionInfo> accepted = policy_options(policy, rest);
    for (const auto& entry : rest) {
      const std::string& key = entry.first;
      const bool known = std::any_of(accepted.begin(), accepted.end(),
                                     [&](const PassOptionInfo& x) { return x.name == key; });
      if (!known)
        throw Error("pass 'assign-sm': option '" + key + "' does not apply to policy '" +
                    a.policy + "' (" + option_names(accepted) + ")");
    }
    return std::make_unique<AssignSmPass>(policy, policy.configure(rest), a.workers.value_or(0),
                                          a.costs);
  };
  return info;
}

}  // namespace

MPK_PASS(assign_sm_pass_info);

}  // namespace mpk
