// The pass registry: the passes that registered themselves, built on first use (so a
// pass's info may use other registries, e.g. assign-sm lists the policies).
#include "passes/registry.h"

#include <algorithm>

namespace mpk {
namespace {

std::vector<PassInfo (*)()>& registered() {
  static std::vector<PassInfo (*)()> makers;
  return makers;
}

}  // namespace

bool register_pass(PassInfo (*make)()) {
  registered().push_back(make);
  return true;
}

const std::vector<PassInfo>& all_passes() {
  static const std::vector<PassInfo> passes = [] {
    std::vector<PassInfo> out;
    for (PassInfo (*make)() : registered()) out.push_back(make());
    std::sort(out.begin(), out.end(),
              [](const PassInfo& a, const PassInfo& b) { return a.name < b.name; });
    return out;
  }();
  return passes;
}

const PassInfo* find_pass(const std::string& name) {
  for (const PassInfo& p : all_passes())
    if (p.name == name) return &p;
  return nullptr;
}

}  // namespace mpk
