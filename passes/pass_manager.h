// Runs a pipeline of passes over a Module: resolves names and options against the
// registry, runs the instruments around each pass (passes/instrument.h: timing always,
// verify-each and IR dumps as configured, and any a tool adds), and records the
// pipeline in the module's provenance.
#pragma once

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "passes/instrument.h"
#include "passes/pipeline.h"

namespace mpk {

struct PassManagerConfig {
#ifdef NDEBUG
  bool verify_each = false;
#else
  bool verify_each = true;
#endif
  std::ostream* print_ir_after_each = nullptr;  // text IR after every pass, when set
};

class PassManager {
 public:
  // Throws mpk::Error naming an unknown pass, an unknown option (listing the known
  // ones) or a malformed option value.
  explicit PassManager(Pipeline pipeline, PassManagerConfig config = {});

  // Throws mpk::Error("pass '<name>' failed: ...") or an instrument's error (the
  // verifier's) after a pass.
  void run(Module& module);

  // Runs around every pass, inside the configured ones: `before` hooks in the order
  // added, `after` hooks in the reverse order.
  void add_instrument(std::unique_ptr<PassInstrument> instrument);

  const std::vector<PassTiming>& timings() const { return timing_->timings(); }
  const Pipeline& pipeline() const { return pipeline_; }

 private:
  Pipeline pipeline_;
  std::vector<std::unique_ptr<Pass>> passes_;
  std::vector<std::unique_ptr<PassInstrument>> instruments_;
  TimingInstrument* timing_ = nullptr;  // owned by instruments_
};

}  // namespace mpk
