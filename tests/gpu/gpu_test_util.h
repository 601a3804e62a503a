// Shared helpers of the GPU tests: skip without a GPU (or with fewer than a multi-GPU
// test needs), scheduled presets with random weights, and comparisons against the CPU executor.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "ir/import/import.h"
#include "passes/pass_manager.h"
#include "passes/pipeline.h"
#include "runtime/cpu/executor.h"
#include "runtime/gpu/megakernel_runtime.h"
#include "runtime/weights/weights.h"

namespace mpk::gputest {

#define MPK_REQUIRE_GPU()                                                              \
  do {                                                                                 \
    if (!::mpk::gpu_available()) GTEST_SKIP() << "no CUDA GPU here: GPU test skipped"; \
  } while (0)

// Multi-GPU tests (suites named *MultiGpu*, labelled `multigpu` too) skip below n GPUs.
#define MPK_REQUIRE_GPUS(n)                                                                                   \
  do {                                                                                                        \
    if (::mpk::gpu_count() < (n))                                                                             \
      GTEST_SKIP() << "needs " << (n) << " GPUs, found " << ::mpk::gpu_count() << ": multi-GPU test skipped"; \
  } while (0)

// The unfused pipeline, or with `fused` the default pipeline's fusions in front.
inline std::string pipeline_for(const std::string& policy, const std::string& decompose = "decompose",
                                bool fused = false) {
  if (fused) return default_pipeline_with(policy, decompose);
  return decompose + ",infer-deps,assign-sm{policy=" + policy + "}";
}

inline Module scheduled(const std::string& model, const std::string& pipeline, int64_t batch = 1,
                        int64_t max_seq_len = 0) {
  ImportOptions o;
  o.batch = batch;
  o.max_seq_len = max_seq_len;
  Module m = import_model(model, o);
  PassManager(parse_pipeline(pipeline)).run(m);
  return m;
}

inline CpuExecResult cpu_run(const Module& m, const Weights& w, int64_t steps,
                             const std::vector<int64_t>& prompt, int64_t prompt_rows = 1) {
  CpuRunOptions o;
  o.steps = steps;
  o.prompt = prompt;
  o.prompt_rows = prompt_rows;
  o.check_races = false;
  return run_cpu(m, w, o);
}

// ||a - b|| / ||b||.
inline double rel_error(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    const double d = static_cast<double>(a[i]) - b[i];
    num += d * d;
    den += static_cast<double>(b[i]) * b[i];
  }
  return a.size() == b.size() && den > 0 ? std::sqrt(num / den) : INFINITY;
}

inline ::testing::AssertionResult same_tokens(const std::vector<std::vector<int32_t>>& gpu,
                                              const std::vector<std::vector<int32_t>>& cpu) {
  if (gpu.size() != cpu.size())
    return ::testing::AssertionFailure() << gpu.size() << " steps vs " << cpu.size();
  for (size_t s = 0; s < gpu.size(); ++s)
    if (gpu[s] != cpu[s])
      return ::testing::AssertionFailure() << "first difference at step " << s << ": gpu " << gpu[s][0]
                                           << " vs cpu " << cpu[s][0];
  return ::testing::AssertionSuccess();
}

}  // namespace mpk::gputest
