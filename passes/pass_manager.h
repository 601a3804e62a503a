// Runs a pipeline of passes over a Module: resolves names and options against the
// registry, times each pass, optionally verifies and dumps the IR after each one, and
// records the pipeline in the module's provenance.
#pragma once

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "passes/pipeline.h"

namespace mpk {

struct PassTiming {
  std::string pass;
  double seconds = 0;
  bool changed = false;
};

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

  // Throws mpk::Error("pass '<name>' failed: ...") or a verifier error after a pass.
  void run(Module& module);

  const std::vector<PassTiming>& timings() const { return timings_; }
  const Pipeline& pipeline() const { return pipeline_; }

 private:
  Pipeline pipeline_;
  PassManagerConfig config_;
  std::vector<std::unique_ptr<Pass>> passes_;
  std::vector<PassTiming> timings_;
};

// "decompose   0.012 s  changed" lines, aligned, with a total.
void print_timings(std::ostream& os, const std::vector<PassTiming>& timings);

}  // namespace mpk
