// Hooks around every pass a PassManager runs (MLIR's PassInstrumentation): timing,
// verify-each and IR dumps are instruments, and a tool may add its own.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "passes/pass.h"

namespace mpk {

class PassInstrument {
 public:
  virtual ~PassInstrument() = default;
  virtual void before_pass(const std::string& /*pass*/, const Module& /*module*/) {}
  // Called when the pass succeeded; throwing mpk::Error stops the pipeline with that message.
  virtual void after_pass(const std::string& /*pass*/, const Module& /*module*/,
                          const PassResult& /*result*/) {}
};

struct PassTiming {
  std::string pass;
  double seconds = 0;
  bool changed = false;
};

// Wall time of each pass, in pipeline order.
class TimingInstrument : public PassInstrument {
 public:
  void before_pass(const std::string& pass, const Module& module) override;
  void after_pass(const std::string& pass, const Module& module, const PassResult& result) override;
  const std::vector<PassTiming>& timings() const { return timings_; }
  void clear() { timings_.clear(); }

 private:
  double start_ = 0;
  std::vector<PassTiming> timings_;
};

// The verifier after every pass: "after pass '<name>': <verifier error>".
class VerifyInstrument : public PassInstrument {
 public:
  void after_pass(const std::string& pass, const Module& module, const PassResult& result) override;
};

// The text IR after every pass, under a "// ----- IR after <name> -----" line.
class PrintIrInstrument : public PassInstrument {
 public:
  explicit PrintIrInstrument(std::ostream& os) : os_(os) {}
  void after_pass(const std::string& pass, const Module& module, const PassResult& result) override;

 private:
  std::ostream& os_;
};

// "decompose   0.012 s  changed" lines, aligned, with a total.
void print_timings(std::ostream& os, const std::vector<PassTiming>& timings);

}  // namespace mpk
