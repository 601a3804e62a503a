// `mpk-opt`: LLVM-style driver for pass pipelines; the same as `mpk opt`.
#include <cstdio>
#include <exception>

#include "ir/error.h"
#include "tools/subcommands.h"

int main(int argc, char** argv) {
  try {
    return mpk::cmd_opt(argc, argv);
  } catch (const mpk::Error& e) {
    std::fprintf(stderr, "mpk-opt: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {  // a bug: every bad input is refused with mpk::Error
    std::fprintf(stderr, "mpk-opt: internal error: %s\n", e.what());
    return 1;
  } catch (...) {
    std::fprintf(stderr, "mpk-opt: internal error: an unknown exception\n");
    return 1;
  }
}
