// The megakernel compiles with nvcc for sm_90a (no GPU needed), for the tiny and
// llama-3.2-1b presets, for tiny-qwen2's biased linears and for prefill chunks, and the
// cubin cache answers the second compile.
#include "codegen/compile.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "codegen/megakernel.h"
#include "ir/error.h"
#include "tests/codegen/test_util.h"

namespace mpk {
namespace {

namespace fs = std::filesystem;

class MegakernelCompile : public ::testing::Test {
 protected:
  void SetUp() override {
    cache_ = fs::temp_directory_path() / ("mpk-codegen-test-" + std::to_string(::getpid()));
    fs::remove_all(cache_);
    try {
      find_nvcc();
    } catch (const Error& e) {
      GTEST_SKIP() << "no nvcc: " << e.what();
    }
  }
  void TearDown() override { fs::remove_all(cache_); }
  fs::path cache_;
};

void compile_and_reload(const std::string& preset, const fs::path& cache,
                        const std::string& pipeline = kDefaultPipeline) {
  const Megakernel k = generate_megakernel(testing::scheduled_preset(preset, pipeline));
  CompileOptions o;
  o.cache_dir = cache.string();
  o.progress = false;
  const CompiledKernel first = compile_megakernel(k.source, o);
  EXPECT_FALSE(first.from_cache);
  EXPECT_GT(first.compile_seconds, 0);
  ASSERT_GT(first.cubin.size(), 1000u);
  EXPECT_TRUE(fs::is_regular_file(first.cubin_path));
  const CompiledKernel second = compile_megakernel(k.source, o);
  EXPECT_TRUE(second.from_cache);
  EXPECT_EQ(second.cubin, first.cubin);
  EXPECT_EQ(second.hash, first.hash);
}

TEST_F(MegakernelCompile, TinyCompilesAndCaches) { compile_and_reload("tiny", cache_); }
TEST_F(MegakernelCompile, Llama32_1bCompilesAndCaches) { compile_and_reload("llama-3.2-1b", cache_); }

// Qwen2's q/k/v biases instantiate task_linear_group (fused, the default pipeline) and
// task_linear (unfused) with BIAS = true.
TEST_F(MegakernelCompile, TinyQwen2BiasesCompile) {
  const std::pair<const char*, const char*> forms[] = {
      {kDefaultPipeline, "task_linear_group<"},
      {"decompose,infer-deps,assign-sm", "task_linear<"},
  };
  for (const auto& form : forms) {
    SCOPED_TRACE(form.first);
    const Megakernel k = generate_megakernel(testing::scheduled_preset("tiny-qwen2", form.first));
    const bool biased = std::any_of(k.instantiations.begin(), k.instantiations.end(), [&](const std::string& s) {
      return s.rfind(form.second, 0) == 0 && s.find(", true>(d, c)") != std::string::npos;
    });
    EXPECT_TRUE(biased) << "no " << form.second << "..., true> instantiation";
    compile_and_reload("tiny-qwen2", cache_, form.first);
  }
}

// Prefill chunks (docs/ir.md "Prefill chunks"): batch x chunk rows on the tensor-core
// linears (two n8 tiles at 16 rows, four at 32, the warps splitting the outputs above),
// each row at its own position: the fused
// attention that appends its rows first (the default pipeline, an odd chunk too), and the
// unfused one with plain rope and kv_append operators and split attention.
TEST_F(MegakernelCompile, PrefillChunksCompile) {
  const std::string unfused = "decompose{attention-splits=2},infer-deps,assign-sm";
  const std::pair<const char*, std::string> forms[] = {
      {"tiny", std::string("prefill-chunk{rows=16},") + kDefaultPipeline},
      {"tiny-qwen3", "prefill-chunk{rows=16}," + unfused},
      {"tiny-qwen3", std::string("prefill-chunk{rows=5},") + kDefaultPipeline},
      {"tiny", std::string("prefill-chunk{rows=32},") + kDefaultPipeline},
      {"tiny-qwen3", "prefill-chunk{rows=40}," + unfused},
      {"llama-3.2-1b", std::string("prefill-chunk{rows=128},") + kDefaultPipeline},
  };
  for (const auto& [preset, pipeline] : forms) {
    SCOPED_TRACE(std::string(preset) + " under " + pipeline);
    compile_and_reload(preset, cache_, pipeline);
  }
}

TEST_F(MegakernelCompile, HashDependsOnTheSource) {
  EXPECT_NE(megakernel_hash("a"), megakernel_hash("b"));
  EXPECT_EQ(megakernel_hash("a"), megakernel_hash("a"));
}

TEST_F(MegakernelCompile, BrokenSourceReportsNvccDiagnostics) {
  CompileOptions o;
  o.cache_dir = cache_.string();
  o.progress = false;
  try {
    compile_megakernel("this is not CUDA;\n", o);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("nvcc failed"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace mpk
