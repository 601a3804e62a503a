// The CPU runtime's memory and write rules: the host memory budget refuses a tensor store
// or random weights beyond it (naming the largest tensor) before allocating; weights are
// read-only, so a task or operator that writes one is refused before anything runs; and
// non-finite logits fail a run naming the step and batch row.
#include "runtime/cpu/tensor_store.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <limits>

#include "ir/error.h"
#include "runtime/cpu/executor.h"
#include "runtime/cpu/memory_budget.h"
#include "runtime/cpu/reference.h"
#include "tests/runtime/runtime_test_util.h"

namespace mpk {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected mpk::Error";
  return "";
}

// Sets MPK_MEMORY_BUDGET_MIB for the scope of one test.
struct BudgetMib {
  explicit BudgetMib(const char* mib) { ::setenv(kMemoryBudgetEnv, mib, 1); }
  ~BudgetMib() { ::unsetenv(kMemoryBudgetEnv); }
};

TEST(MemoryBudget, TensorStoreOverTheBudgetIsRefusedNamingTheLargestTensor) {
  const Module m = test::preset_module("tiny", 8, 2048);  // k/v caches of 4 MiB each
  const Weights w = random_weights(m, 1);
  const BudgetMib budget("4");
  const std::string msg = error_of([&] { TensorStore store(m.program, w); });
  EXPECT_NE(msg.find("'k_cache.0', bf16 [8, 2048, 2, 64], 4.0 MiB"), std::string::npos) << msg;
  EXPECT_NE(msg.find("over the host memory budget of 4.0 MiB"), std::string::npos) << msg;
}

TEST(MemoryBudget, RandomWeightsOverTheBudgetAreRefused) {
  const Module m = test::preset_module("tiny");
  const BudgetMib budget("1");
  const std::string msg = error_of([&] { random_weights(m, 1); });
  EXPECT_NE(msg.find("random bf16 weights"), std::string::npos) << msg;
  EXPECT_NE(msg.find("over the host memory budget of 1.0 MiB"), std::string::npos) << msg;
}

TEST(MemoryBudget, DefaultIsAFractionOfPhysicalMemoryAndMalformedValuesAreRefused) {
  ::unsetenv(kMemoryBudgetEnv);
  EXPECT_GT(host_memory_budget(), int64_t{1} << 28);
  for (const char* bad : {"", "0", "-5", "12x", "99999999999999999999"}) {
    const BudgetMib budget(bad);
    EXPECT_NE(error_of([] { host_memory_budget(); }).find(kMemoryBudgetEnv), std::string::npos) << bad;
  }
}

// `tokens` (written by the argmax, read by the embedding) declared a weight: its memory
// is the caller's, possibly a read-only mapping of a checkpoint.
TEST(ReadOnlyWeights, ATaskWritingAWeightIsRefusedBeforeRunning) {
  Module m = test::compile(test::preset_module("tiny"), test::policy_pipeline("critical-path"));
  for (Tensor& t : m.program.tensors)
    if (t.name == "tokens") t.role = TensorRole::kWeight;
  const Weights w = random_weights(m, 1);
  CpuRunOptions o;
  o.steps = 2;
  EXPECT_NE(error_of([&] { run_cpu(m, w, o); }).find("writes tensor 'tokens', which is read-only"),
            std::string::npos);
  EXPECT_NE(error_of([&] { run_reference(m, w, 2, {1}); }).find("operator 'argmax' writes tensor 'tokens', which is read-only"),
            std::string::npos);
}

// One NaN weight makes one logit NaN, which the argmax skips: the run must fail anyway.
TEST(NonFiniteLogits, FailTheRunNamingTheStepAndRow) {
  const Module m = test::compile(test::preset_module("tiny", 2), test::policy_pipeline("critical-path"));
  const Weights w = random_weights(m, 1);
  auto* lm_head = static_cast<uint16_t*>(const_cast<void*>(w.get("lm_head.weight").data));
  lm_head[256 * 9] = 0x7FC0;  // row 9: logit 9 of every batch row is NaN
  CpuRunOptions o;
  o.steps = 3;
  EXPECT_NE(error_of([&] { run_cpu(m, w, o); }).find("step 0, batch row 0: the logits hold NaN or infinity"),
            std::string::npos);
  EXPECT_NE(error_of([&] { run_reference(m, w, 3, {1}); }).find("step 0, batch row 0: the logits hold NaN"),
            std::string::npos);
}

}  // namespace
}  // namespace mpk
