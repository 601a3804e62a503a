// The pass instruments that ship with the pass manager: timing, verify-each, IR dumps.
#include "passes/instrument.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "ir/error.h"
#include "ir/text.h"
#include "ir/verifier.h"

namespace mpk {
namespace {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

void TimingInstrument::before_pass(const std::string&, const Module&) { start_ = now_seconds(); }

void TimingInstrument::after_pass(const std::string& pass, const Module&, const PassResult& result) {
  timings_.push_back({pass, now_seconds() - start_, result.changed});
}

void VerifyInstrument::after_pass(const std::string& pass, const Module& module, const PassResult&) {
  try {
    verify_or_throw(module);
  } catch (const Error& e) {
    throw Error("after pass '" + pass + "': " + e.what());
  }
}

void PrintIrInstrument::after_pass(const std::string& pass, const Module& module,
                                   const PassResult&) {
  os_ << "// ----- IR after " << pass << " -----\n" << print_module(module);
}

void print_timings(std::ostream& os, const std::vector<PassTiming>& timings) {
  size_t width = 5;
  double total = 0;
  for (const PassTiming& t : timings) width = std::max(width, t.pass.size());
  char line[256];
  for (const PassTiming& t : timings) {
    std::snprintf(line, sizeof line, "  %-*s %9.4f s  %s\n", static_cast<int>(width),
                  t.pass.c_str(), t.seconds, t.changed ? "changed" : "unchanged");
    os << line;
    total += t.seconds;
  }
  std::snprintf(line, sizeof line, "  %-*s %9.4f s\n", static_cast<int>(width), "total", total);
  os << line;
}

}  // namespace mpk
