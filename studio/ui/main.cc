// mpk-studio: the window performance engineers look at runs in (docs/studio.md).
#include <cstdio>
#include <string>
#include <vector>

#include "ir/error.h"
#include "studio/ui/app.h"

int main(int argc, char** argv) {
  try {
    const std::vector<std::string> args(argv + 1, argv + argc);
    for (const std::string& a : args)
      if (a == "-h" || a == "--help") {
        std::fputs(mpk::studio::app_usage().c_str(), stdout);
        return 0;
      }
    return mpk::studio::run_app(mpk::studio::parse_app_options(args));
  } catch (const mpk::Error& e) {
    std::fprintf(stderr, "mpk-studio: error: %s\n", e.what());
    return 2;
  }
}
