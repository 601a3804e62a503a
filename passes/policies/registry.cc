// The list of scheduling policies, one line each.
#include "passes/policies/policy.h"

namespace mpk {

const std::vector<PolicyInfo>& all_policies() {
  static const std::vector<PolicyInfo> policies = {
      round_robin_policy_info(),
      critical_path_policy_info(),
      locality_policy_info(),
  };
  return policies;
}

const PolicyInfo* find_policy(const std::string& name) {
  for (const PolicyInfo& p : all_policies())
    if (p.name == name) return &p;
  return nullptr;
}

std::string known_policies() {
  std::string s;
  for (const PolicyInfo& p : all_policies()) s += (s.empty() ? "" : ", ") + p.name;
  return s;
}

}  // namespace mpk
