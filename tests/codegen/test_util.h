// Shared helpers of the codegen tests: a preset imported and scheduled by a pipeline.
#pragma once

#include <string>

#include "ir/import/import.h"
#include "ir/module.h"
#include "passes/pass_manager.h"
#include "passes/pipeline.h"

namespace mpk::testing {

inline Module scheduled_preset(const std::string& preset,
                               const std::string& pipeline = kDefaultPipeline,
                               int64_t batch = 1, int64_t max_seq_len = 0) {
  ImportOptions o;
  o.batch = batch;
  if (max_seq_len > 0) o.max_seq_len = max_seq_len;
  Module m = import_model(preset, o);
  PassManager pm(parse_pipeline(pipeline));
  pm.run(m);
  return m;
}

}  // namespace mpk::testing
