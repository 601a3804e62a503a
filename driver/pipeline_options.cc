// entry_options: the pass registry and the policies' option lists.
#include "driver/pipeline_options.h"

#include "passes/policies/policy.h"
#include "passes/registry.h"

namespace mpk {

std::vector<PassOptionInfo> entry_options(const PipelineEntry& e) {
  const PassInfo* info = find_pass(e.pass);
  if (!info) return {};
  if (e.pass != "assign-sm") return info->options;
  std::vector<PassOptionInfo> out;
  std::string policy;
  for (const PassOptionInfo& o : info->options)
    if (o.name == "policy" || o.name == "workers") {
      out.push_back(o);
      if (o.name == "policy")
        policy = e.options.count("policy") ? e.options.at("policy") : o.default_value;
    }
  if (const PolicyInfo* p = find_policy(policy)) {
    PassOptions own = e.options;
    own.erase("policy");
    own.erase("workers");
    for (const PassOptionInfo& o : policy_options(*p, own)) out.push_back(o);
  }
  return out;
}

}  // namespace mpk
