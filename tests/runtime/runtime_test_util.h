// Helpers shared by the runtime tests: preset modules, compiling them through a pass
// pipeline, and scratch directories.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "ir/import/import.h"
#include "passes/pass_manager.h"
#include "passes/pipeline.h"

namespace mpk::test {

inline Module preset_module(const std::string& preset, int64_t batch = 1, int64_t max_seq_len = 0) {
  ImportOptions o;
  o.batch = batch;
  o.max_seq_len = max_seq_len;
  return build_module(*find_preset(preset), o, "preset:" + preset);
}

// tiny with 8 query and 8 KV heads of 32: what 4 and 8 tensor-parallel ranks can split
// (tiny's 4 and 2 heads split over 2 ranks at most).
inline Module tiny_with_eight_heads() {
  ModelConfig c = *find_preset("tiny");
  c.num_q_heads = 8;
  c.num_kv_heads = 8;
  c.head_dim = 32;
  return build_module(c, ImportOptions{}, "tiny with 8 heads");
}

// Runs `pipeline` (verifying after each pass) on a copy of `m`.
inline Module compile(Module m, const std::string& pipeline) {
  PassManagerConfig cfg;
  cfg.verify_each = true;
  PassManager pm(parse_pipeline(pipeline), cfg);
  pm.run(m);
  return m;
}

inline std::string policy_pipeline(const std::string& policy, const std::string& decompose_opts = "") {
  return "decompose" + (decompose_opts.empty() ? "" : "{" + decompose_opts + "}") +
         ",infer-deps,assign-sm{policy=" + policy + "}";
}

// A fresh empty directory under the system temp dir, unique per test, removed when the
// test binary exits.
inline std::string scratch_dir(const std::string& name) {
  namespace fs = std::filesystem;
  struct Cleanup {
    std::vector<fs::path> dirs;
    ~Cleanup() {
      std::error_code ec;
      for (const fs::path& d : dirs) fs::remove_all(d, ec);
    }
  };
  static Cleanup cleanup;
  const fs::path p = fs::temp_directory_path() / ("mpk_runtime_test_" + std::to_string(::getpid()) + "_" + name);
  fs::remove_all(p);
  fs::create_directories(p);
  cleanup.dirs.push_back(p);
  return p.string();
}

}  // namespace mpk::test
