// `mpk run` backends (cpu, gpu, sim). Each lives in tools/run_<name>.cc and registers
// itself with one line: MPK_RUN_BACKEND(cpu, "numerics on the CPU", run_cpu, nullptr);
// `mpk run` without --backend picks gpu when available, else sim, else cpu.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "passes/policies/policy.h"

namespace mpk {

// What `mpk run` was asked for; parsed once in cmd_run.cc.
struct RunRequest {
  std::string model = "llama-3.2-1b";  // preset | HF dir | config.json
  std::string policy = kDefaultPolicy;
  std::string pipeline;                // full pass pipeline; "" = default with `policy`
  int64_t steps = 16;
  int64_t batch = 1;
  int64_t max_seq_len = 0;             // 0: importer's default
  std::vector<int64_t> prompt = {1};
  std::string order = "schedule";      // cpu: schedule | random
  uint64_t seed = 0;
  int64_t threads = 0;                 // cpu: 0 = hardware concurrency
  std::string dump_logits;             // path, "" = none
  std::string trace;                   // trace.db path, "" = none
  std::string weights_seed = "0";      // seed for random weights when no checkpoint
  double watchdog_s = 2.0;             // gpu
  std::string costs;                   // cost file to schedule (and simulate) with, "" = machine model
};

struct RunBackend {
  const char* name;
  const char* summary;
  int (*run)(const RunRequest& request);
  bool (*available)();  // e.g. gpu: a GPU is present; nullptr = always
};

bool register_run_backend(const RunBackend& b);
const std::vector<RunBackend>& run_backends();

}  // namespace mpk

#define MPK_RUN_BACKEND(name, summary, fn, available)                   \
  static const bool mpk_run_backend_registered_##name = ::mpk::register_run_backend( \
      {#name, summary, fn, available})
