// pinned: runs a base policy, then replays hand moves on its lists (passes/policies/
// pinned.h), skipping with a recorded reason each move that no longer applies. The
// schedule's params say what it came from: the base's params, `base`, `moves` (in
// canonical form), `moves_applied` and, when any were skipped, `moves_skipped`.
#include "passes/policies/pinned.h"

#include <algorithm>
#include <charconv>

#include "ir/error.h"
#include "passes/policies/policy.h"

namespace mpk {
namespace {

// Parses a whole non-negative decimal integer from `s`; false when it is not one.
template <typename T>
bool parse_id(std::string_view s, T& v) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return !s.empty() && ec == std::errc() && p == s.data() + s.size() && v >= 0;
}

PinnedMove parse_one(std::string_view s, size_t index) {
  auto fail = [&](const std::string& what) -> PinnedMove {
    throw Error("move " + std::to_string(index) + " ('" + std::string(s) + "'): " + what +
                " (a move is TASK>wWORKER@first or TASK>wWORKER@after:TASK)");
  };
  const size_t gt = s.find('>');
  if (gt == std::string_view::npos) return fail("no '>'");
  const size_t at = s.find('@', gt);
  if (at == std::string_view::npos) return fail("no '@'");
  PinnedMove m;
  if (!parse_id(s.substr(0, gt), m.task)) return fail("bad task id");
  const std::string_view worker = s.substr(gt + 1, at - gt - 1);
  if (worker.empty() || worker[0] != 'w' || !parse_id(worker.substr(1), m.worker))
    return fail("bad worker (want w<index>)");
  const std::string_view place = s.substr(at + 1);
  constexpr std::string_view kAfter = "after:";
  if (place == "first") {
    m.after = -1;
  } else if (place.substr(0, kAfter.size()) == kAfter) {
    if (!parse_id(place.substr(kAfter.size()), m.after)) return fail("bad anchor task id");
  } else {
    return fail("bad place (want first or after:TASK)");
  }
  return m;
}

}  // namespace

std::string print_move(const PinnedMove& m) {
  return std::to_string(m.task) + ">w" + std::to_string(m.worker) + "@" +
         (m.after < 0 ? std::string("first") : "after:" + std::to_string(m.after));
}

std::string print_moves(const std::vector<PinnedMove>& moves) {
  std::string s;
  for (const PinnedMove& m : moves) s += (s.empty() ? "" : ";") + print_move(m);
  return s;
}

std::vector<PinnedMove> parse_moves(std::string_view text) {
  std::vector<PinnedMove> moves;
  if (text.empty()) return moves;
  size_t begin = 0;
  while (true) {
    const size_t end = text.find(';', begin);
    moves.push_back(parse_one(text.substr(begin, end - begin), moves.size() + 1));
    if (end == std::string_view::npos) break;
    begin = end + 1;
  }
  return moves;
}

WorkerLists::WorkerLists(const TaskGraphIndex& graph, std::vector<std::vector<TaskId>> lists)
    : graph_(graph), lists_(std::move(lists)), worker_(list_workers(graph, lists_, false)),
      position_(graph.num_tasks(), -1) {
  for (const std::vector<TaskId>& list : lists_)
    for (size_t i = 0; i < list.size(); ++i) position_[list[i]] = static_cast<int32_t>(i);
}

std::string WorkerLists::check(const PinnedMove& m) const {
  const int32_t n = graph_.num_tasks();
  if (m.task < 0 || m.task >= n)
    return "task " + std::to_string(m.task) + " does not exist (the graph has " +
           std::to_string(n) + " tasks)";
  if (worker_[m.task] < 0) return "task " + std::to_string(m.task) + " is not scheduled";
  if (m.worker < 0 || m.worker >= num_workers())
    return "worker " + std::to_string(m.worker) + " does not exist (the schedule has " +
           std::to_string(num_workers()) + " workers)";
  if (m.after < 0) return "";
  if (m.after >= n) return "anchor task " + std::to_string(m.after) + " does not exist";
  if (m.after == m.task) return "task " + std::to_string(m.task) + " cannot follow itself";
  if (worker_[m.after] < 0) return "anchor task " + std::to_string(m.after) + " is not scheduled";
  if (worker_[m.after] != m.worker)
    return "anchor task " + std::to_string(m.after) + " is on worker " +
           std::to_string(worker_[m.after]) + ", not on worker " + std::to_string(m.worker);
  return "";
}

void WorkerLists::remove(TaskId t) {
  std::vector<TaskId>& list = lists_[worker_[t]];
  list.erase(list.begin() + position_[t]);
  for (size_t i = position_[t]; i < list.size(); ++i) position_[list[i]] = static_cast<int32_t>(i);
  worker_[t] = position_[t] = -1;
}

void WorkerLists::insert(TaskId t, int32_t worker, int32_t index) {
  std::vector<TaskId>& list = lists_[worker];
  list.insert(list.begin() + index, t);
  worker_[t] = worker;
  for (size_t i = index; i < list.size(); ++i) position_[list[i]] = static_cast<int32_t>(i);
}

std::string WorkerLists::apply_unchecked(const PinnedMove& m) {
  std::string problem = check(m);
  if (!problem.empty()) return problem;
  remove(m.task);
  insert(m.task, m.worker, m.after < 0 ? 0 : position_[m.after] + 1);
  return "";
}

std::string WorkerLists::apply(const PinnedMove& m) {
  const int32_t old_worker = m.task >= 0 && m.task < graph_.num_tasks() ? worker_[m.task] : -1;
  const int32_t old_position = old_worker >= 0 ? position_[m.task] : -1;
  std::string problem = apply_unchecked(m);
  if (!problem.empty()) return problem;
  const std::vector<CycleLink> cycle = cycle_through(m.task);
  if (cycle.empty()) return "";
  remove(m.task);
  insert(m.task, old_worker, old_position);
  return "it can deadlock: " + print_cycle(cycle);
}

std::vector<CycleLink> WorkerLists::cycle_through(TaskId t) const {
  return WaitCheck(graph_, list_order(graph_, lists_)).cycle(t);
}

PassOptions replay_options(const Schedule& s) {
  PassOptions o;
  o["policy"] = s.policy;
  if (auto it = s.params.find("workers"); it != s.params.end())
    o["workers"] = format_attr_value(it->second);
  if (auto it = s.params.find("costs"); it != s.params.end())
    if (auto* path = std::get_if<std::string>(&it->second)) o["costs"] = *path;
  const PolicyInfo* policy = find_policy(s.policy);
  if (!policy) return o;
  PassOptions chosen;
  if (!policy->base_option.empty())
    if (auto it = s.params.find(policy->base_option); it != s.params.end())
      if (auto* v = std::get_if<std::string>(&it->second)) chosen[policy->base_option] = *v;
  for (const PassOptionInfo& opt : policy_options(*policy, chosen)) {
    std::string key = opt.name;
    std::replace(key.begin(), key.end(), '-', '_');
    auto it = s.params.find(key);
    if (it == s.params.end()) continue;
    auto* text = std::get_if<std::string>(&it->second);
    o[opt.name] = text ? *text : format_attr_value(it->second);
  }
  return o;
}

PassOptions pinned_options(const Schedule& s, const std::vector<PinnedMove>& moves) {
  PassOptions o = replay_options(s);
  if (s.policy == "pinned") {
    std::vector<PinnedMove> all = parse_moves(o.count("moves") ? o.at("moves") : "");
    all.insert(all.end(), moves.begin(), moves.end());
    if (!all.empty()) o["moves"] = print_moves(all);
    return o;
  }
  o["base"] = o.at("policy");
  o["policy"] = "pinned";
  if (!moves.empty()) o["moves"] = print_moves(moves);
  return o;
}

namespace {

struct PinnedOptions {
  std::string base = kDefaultPolicy;
  std::string moves;
};

// `base` is declared as text here; all_policies() makes it a choice over the policies
// without a base (they are not all known yet while this runs).
PolicyInfo pinned_policy_info() {
  using O = PinnedOptions;
  const auto schema =
      OptionSchema<O>()
          .text("base", &O::base, "the policy whose schedule the moves edit (its options apply too)")
          .text("moves", &O::moves,
                "moves in order, joined by ';': TASK>wWORKER@first or TASK>wWORKER@after:TASK");
  PolicyInfo info;
  info.name = "pinned";
  info.summary = "a base policy's schedule with hand moves replayed on top";
  info.base_option = "base";
  info.options = schema.infos();
  info.configure = [schema](const PassOptions& o) -> ScheduleFn {
    PassOptions own, base_options;
    for (const auto& [key, value] : o) (schema.declares(key) ? own : base_options).emplace(key, value);
    const O p = schema.parse(own, "assign-sm");
    const PolicyInfo* base = find_policy(p.base);
    if (!base || !base->base_option.empty())
      throw Error("pass 'assign-sm': option 'base' of policy 'pinned' must name a policy "
                  "without a base, got '" + p.base + "'");
    std::vector<PinnedMove> moves;
    try {
      moves = parse_moves(p.moves);
    } catch (const Error& e) {
      throw Error(std::string("pass 'assign-sm': option 'moves': ") + e.what());
    }
    const ScheduleFn run_base = base->configure(base_options);
    return [run_base, moves, base_name = p.base](const ScheduleRequest& r) {
      PolicyOutput out = run_base(r);
      WorkerLists lists(r.index, std::move(out.workers));
      int64_t applied = 0;
      std::string skipped;
      for (size_t i = 0; i < moves.size(); ++i) {
        const std::string reason = lists.apply(moves[i]);
        if (reason.empty()) {
          ++applied;
          continue;
        }
        skipped += (skipped.empty() ? "" : "; ") + std::string("move ") + std::to_string(i + 1) +
                   " (" + print_move(moves[i]) + "): " + reason;
      }
      out.workers = lists.take();
      out.params["base"] = base_name;
      out.params["moves"] = print_moves(moves);
      out.params["moves_applied"] = applied;
      if (!skipped.empty()) out.params["moves_skipped"] = skipped;
      return out;
    };
  };
  return info;
}

}  // namespace

MPK_POLICY(pinned_policy_info);

}  // namespace mpk
