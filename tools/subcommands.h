// The subcommands of `mpk`, each implemented in its own tools/cmd_*.cc file.
// Adding one: a cmd_*.cc file plus one line here and one line in mpk.cc's table.
#pragma once

namespace mpk {

int cmd_import(int argc, char** argv);
int cmd_opt(int argc, char** argv);

}  // namespace mpk
