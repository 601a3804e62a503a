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
                               int64_t batch = 1) {
  ImportOptions o;
  o.batch = batch;
  Module m = import_model(preset, o);
  PassManager pm(parse_pipeline(pipeline));
  pm.run(m);
  return m;
}

}  // namespace mpk::testing
