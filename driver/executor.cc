// The executor table and the lookups over it.
#include "driver/executor.h"

#include "ir/error.h"
#ifdef MPK_DRIVER_WITH_GPU
#include "runtime/gpu/cuda_util.h"
#endif

namespace mpk {
namespace {

bool always() { return true; }

}  // namespace

const std::string& Executor::weights_note() const {
  static const std::string none;
  return none;
}

const std::vector<ExecutorKind>& executor_kinds() {
  static const std::vector<ExecutorKind> kinds = {
      {"cpu", "numerics on the CPU: the executor that the GPU is checked against", always,
       make_cpu_executor},
#ifdef MPK_DRIVER_WITH_GPU
      {"gpu", "the CUDA megakernel: all decode steps in one persistent launch", gpu_available,
       make_gpu_executor},
#endif
      {"sim", "timing from the cost model, no GPU needed; writes trace.db", always,
       make_sim_executor},
  };
  return kinds;
}

const ExecutorKind* find_executor(const std::string& name) {
  for (const ExecutorKind& k : executor_kinds())
    if (name == k.name) return &k;
  return nullptr;
}

const ExecutorKind& usable_executor(const std::string& name) {
  const ExecutorKind* kind = find_executor(name);
  if (!kind) {
    std::string known;
    for (const ExecutorKind& k : executor_kinds()) known += (known.empty() ? "" : ", ") + std::string(k.name);
    throw Error("unknown backend '" + name + "' (known: " + known + ")");
  }
  if (!kind->available()) throw Error("backend '" + name + "' is not available on this machine");
  return *kind;
}

std::unique_ptr<Executor> make_executor(const std::string& name, const Module& module,
                                        const ExecutorOptions& options) {
  return usable_executor(name).make(module, options);
}

}  // namespace mpk
