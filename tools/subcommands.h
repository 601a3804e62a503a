// Registry of `mpk` subcommands. Each lives in its own tools/cmd_*.cc file and
// registers itself with one line:
//   MPK_SUBCOMMAND(import, "import a model into a .mpk program", cmd_import);
#pragma once

#include <vector>

namespace mpk {

struct Subcommand {
  const char* name;
  const char* summary;
  int (*main)(int argc, char** argv);  // argv[0] is the subcommand name
};

bool register_subcommand(const Subcommand& s);
// Sorted by name.
std::vector<Subcommand> subcommands();

// `mpk-opt` is `mpk opt`.
int cmd_opt(int argc, char** argv);

}  // namespace mpk

#define MPK_SUBCOMMAND(name, summary, fn) \
  static const bool mpk_subcommand_registered_##name = ::mpk::register_subcommand({#name, summary, fn})
