// `mpk`: the umbrella CLI. Dispatches to one registered subcommand; errors print one
// line, "mpk <command>: error: ...", and exit 1.
#include <cstdio>
#include <cstring>
#include <exception>

#include "ir/error.h"
#include "tools/subcommands.h"

namespace {

void print_help() {
  std::printf(
      "mpk: compile LLM decoding into one persistent GPU megakernel, and see how it runs.\n\n"
      "usage: mpk <command> [options]   (mpk <command> --help for its options)\n\ncommands:\n");
  for (const mpk::Subcommand& s : mpk::subcommands())
    std::printf("  %-12s %s\n", s.name, s.summary);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    print_help();
    return argc < 2 ? 2 : 0;
  }
  for (const mpk::Subcommand& s : mpk::subcommands()) {
    if (std::strcmp(argv[1], s.name) != 0) continue;
    try {
      return s.main(argc - 1, argv + 1);
    } catch (const mpk::Error& e) {
      std::fprintf(stderr, "mpk %s: error: %s\n", s.name, e.what());
      return 1;
    } catch (const std::exception& e) {  // a bug: every bad input is refused with mpk::Error
      std::fprintf(stderr, "mpk %s: internal error: %s\n", s.name, e.what());
      return 1;
    } catch (...) {
      std::fprintf(stderr, "mpk %s: internal error: an unknown exception\n", s.name);
      return 1;
    }
  }
  std::fprintf(stderr, "mpk: error: unknown command '%s' (see mpk --help)\n", argv[1]);
  return 2;
}
