// The panel registry (studio/model/panel_registry.h).
#include "studio/model/panel_registry.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace mpk::studio {
namespace {

std::vector<PanelInfo>& panels() {
  static std::vector<PanelInfo> all;  // built at start-up, read-only after
  return all;
}

}  // namespace

bool register_panel(const PanelInfo& p) {
  std::vector<PanelInfo>& all = panels();
  if (find_panel(p.name)) {
    std::fprintf(stderr, "mpk-studio: two panels are named '%s'\n", p.name);
    std::abort();
  }
  all.push_back(p);
  std::stable_sort(all.begin(), all.end(), [](const PanelInfo& a, const PanelInfo& b) {
    return a.order != b.order ? a.order < b.order : std::string_view(a.name) < std::string_view(b.name);
  });
  return true;
}

const std::vector<PanelInfo>& registered_panels() { return panels(); }

const PanelInfo* find_panel(std::string_view name) {
  for (const PanelInfo& p : panels())
    if (name == p.name) return &p;
  return nullptr;
}

}  // namespace mpk::studio
