// The policy registry: the policies that registered themselves, built on first use.
#include "passes/policies/policy.h"

#include <algorithm>

namespace mpk {
namespace {

std::vector<PolicyInfo (*)()>& registered() {
  static std::vector<PolicyInfo (*)()> makers;
  return makers;
}

// Makes each base option a choice over every policy that has no base itself.
std::vector<PolicyInfo> with_base_choices(std::vector<PolicyInfo> policies) {
  std::vector<std::string> bases;
  for (const PolicyInfo& p : policies)
    if (p.base_option.empty()) bases.push_back(p.name);
  for (PolicyInfo& p : policies)
    for (PassOptionInfo& o : p.options)
      if (o.name == p.base_option) {
        o.kind = OptionKind::kChoice;
        o.choices = bases;
      }
  return policies;
}

}  // namespace

bool register_policy(PolicyInfo (*make)()) {
  registered().push_back(make);
  return true;
}

const std::vector<PolicyInfo>& all_policies() {
  static const std::vector<PolicyInfo> policies = [] {
    std::vector<PolicyInfo> out;
    for (PolicyInfo (*make)() : registered()) out.push_back(make());
    std::sort(out.begin(), out.end(),
              [](const PolicyInfo& a, const PolicyInfo& b) { return a.name < b.name; });
    return with_base_choices(std::move(out));
  }();
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

std::vector<PassOptionInfo> policy_options(const PolicyInfo& policy, const PassOptions& options) {
  std::vector<PassOptionInfo> out = policy.options;
  if (policy.base_option.empty()) return out;
  std::string base;
  for (const PassOptionInfo& o : policy.options)
    if (o.name == policy.base_option) base = o.default_value;
  auto it = options.find(policy.base_option);
  if (it != options.end()) base = it->second;
  const PolicyInfo* b = find_policy(base);
  if (b && b->base_option.empty())
    for (const PassOptionInfo& o : b->options) out.push_back(o);
  return out;
}

}  // namespace mpk
