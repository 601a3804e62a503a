// Subcommand registry storage.
#include "tools/subcommands.h"

#include <algorithm>
#include <cstring>

namespace mpk {
namespace {

std::vector<Subcommand>& table() {
  static std::vector<Subcommand> t;
  return t;
}

}  // namespace

bool register_subcommand(const Subcommand& s) {
  table().push_back(s);
  return true;
}

std::vector<Subcommand> subcommands() {
  std::vector<Subcommand> t = table();
  std::sort(t.begin(), t.end(),
            [](const Subcommand& a, const Subcommand& b) { return std::strcmp(a.name, b.name) < 0; });
  return t;
}

}  // namespace mpk
