// The weights a run decodes with: the checkpoint's safetensors when the module was
// imported from a Hugging Face folder that has them, else deterministic random bf16
// weights from a seed; for a module sharded over tensor-parallel ranks, the whole model's
// weights and each rank's slices of them. Used by the cpu and gpu executors and `mpk bench`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/module.h"
#include "runtime/weights/weights.h"

namespace mpk {

struct RunWeights {
  Weights weights;            // the whole model's (for a sharded module too)
  std::vector<Weights> ranks;  // a module with attr tp: rank r's slices of `weights`' data
  std::string note;  // one line: where they came from
  double seconds = 0;
};

// Throws mpk::Error naming the checkpoint file, or random weights over the host memory
// budget.
RunWeights load_run_weights(const Module& module, uint64_t seed);

}  // namespace mpk
