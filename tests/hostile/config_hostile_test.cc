// Hostile config.json files given to `mpk import` and `mpk run`: sizes whose products wrap,
// values beyond int64 or double, absurd layer counts, endless or deeply nested files, and
// derived sizes (parameters, KV caches, the CPU run's memory) beyond their bounds are each
// refused with one line naming the field and the limit.
#include <cstdlib>

#include "tests/hostile/hostile_fixture.h"

namespace mpk::hostile {
namespace {

// A valid Llama config (Llama 3.2 1B's sizes) with `fields` (JSON members, "k": v, ...)
// replacing or adding members.
std::string llama_config(const std::string& fields = "") {
  std::string base = R"("model_type": "llama", "hidden_size": 2048, "num_hidden_layers": 16,
    "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 64,
    "intermediate_size": 8192, "vocab_size": 128256, "rms_norm_eps": 1e-05,
    "max_position_embeddings": 131072, "rope_theta": 500000.0, "tie_word_embeddings": true)";
  return "{" + base + (fields.empty() ? "" : ", " + fields) + "}";
}

class ConfigHostileTest : public HostileTest {
 protected:
  // `mpk import` of a config.json holding `text`.
  CliResult import(const std::string& text, const std::string& options = "", int limit_s = 30) {
    return run("mpk", "import --model '" + write("config.json", text) + "' -o '" + path("out.mpk") + "' " +
                          options, limit_s);
  }
};

TEST_F(ConfigHostileTest, HeadCountsWhoseProductsWrapAreRefused) {
  const CliResult r = import(llama_config(R"("num_attention_heads": 576460752303423492,
      "num_key_value_heads": 288230376151711746, "head_dim": 64)"));
  expect_refused(r, "field 'num_attention_heads' must be in 1..256, got 576460752303423492");
}

TEST_F(ConfigHostileTest, HiddenSizeNearInt64MaxIsRefused) {
  const CliResult r = import(llama_config(R"("hidden_size": 9223372036854775807)"));
  expect_refused(r, "field 'hidden_size' must be in 1..65536, got 9223372036854775807");
}

TEST_F(ConfigHostileTest, HundredThousandLayersAreRefusedQuickly) {
  expect_refused(import(llama_config(R"("num_hidden_layers": 100000)"), "", 10),
                 "field 'num_hidden_layers' must be in 1..256, got 100000");
}

TEST_F(ConfigHostileTest, VocabBeyondInt64IsNamedAsSuch) {
  expect_refused(import(llama_config(R"("vocab_size": 18446744073709551615)")),
                 "field 'vocab_size' must be in 1..1048576, got 18446744073709551615 (beyond int64)");
}

TEST_F(ConfigHostileTest, NonIntegerSizeIsNamedWithItsRange) {
  expect_refused(import(llama_config(R"("intermediate_size": 1e20)")),
                 "field 'intermediate_size' must be an integer in 1..262144, got 1e+20");
}

TEST_F(ConfigHostileTest, NumberBeyondDoubleIsMalformedJson) {
  expect_refused(import(llama_config(R"("rope_theta": 1e999)")), "malformed JSON");
}

TEST_F(ConfigHostileTest, RopeThetaOutOfRangeIsRefused) {
  expect_refused(import(llama_config(R"("rope_theta": 1e300)")),
                 "field 'rope_theta' must be a number in [1, 1e+12], got 1e+300");
}

TEST_F(ConfigHostileTest, RmsNormEpsOutOfRangeIsRefused) {
  expect_refused(import(llama_config(R"("rms_norm_eps": 1e300)")),
                 "field 'rms_norm_eps' must be a number in (0, 1], got 1e+300");
}

TEST_F(ConfigHostileTest, MaxPositionEmbeddingsBeyondLimitAreRefused) {
  expect_refused(import(llama_config(R"("max_position_embeddings": 1099511627776)")),
                 "field 'max_position_embeddings' must be in 1..16777216");
}

TEST_F(ConfigHostileTest, RopeScalingFieldsAreBounded) {
  expect_refused(import(llama_config(R"("rope_scaling": {"rope_type": "llama3", "factor": 1e308,
      "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192})")),
                 "field 'rope_scaling.factor' must be a number in (0, 1024]");
}

TEST_F(ConfigHostileTest, DeeplyNestedConfigIsRefused) {
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  expect_refused(import(llama_config("\"hidden_size\": " + deep)), "nested deeper than 16 levels");
}

TEST_F(ConfigHostileTest, OversizedConfigIsRefusedAtTheSizeLimit) {
  const std::string padded = llama_config() + std::string(5 << 20, ' ');
  expect_refused(import(padded), "is larger than 4 MiB");
}

TEST_F(ConfigHostileTest, ParameterCountIsBounded) {
  expect_refused(import(llama_config(R"("num_hidden_layers": 256, "hidden_size": 65536,
      "intermediate_size": 262144, "num_attention_heads": 128, "head_dim": 512)")),
                 "parameter count");
}

TEST_F(ConfigHostileTest, KvCacheBytesAreBounded) {
  const CliResult r = import(llama_config(R"("max_position_embeddings": 16777216, "num_hidden_layers": 126,
      "num_attention_heads": 128, "num_key_value_heads": 128, "hidden_size": 16384, "head_dim": 128)"),
                             "--batch 8 --max-seq 16777216");
  expect_refused(r, "the KV caches need");
}

// The CPU run's KV caches exceed the host memory budget: refused before any allocation,
// naming the largest tensor and the budget.
TEST_F(ConfigHostileTest, CpuRunOverTheMemoryBudgetIsRefused) {
  ::setenv("MPK_MEMORY_BUDGET_MIB", "8", 1);
  const CliResult r = run("mpk", "run --backend cpu --model tiny --batch 8 --max-seq 2048 --steps 1");
  ::unsetenv("MPK_MEMORY_BUDGET_MIB");
  expect_refused(r, "over the host memory budget of 8.0 MiB");
  EXPECT_NE(r.err.find("'k_cache.0'"), std::string::npos) << r.err;
}

TEST_F(ConfigHostileTest, MalformedMemoryBudgetIsRefused) {
  ::setenv("MPK_MEMORY_BUDGET_MIB", "lots", 1);
  const CliResult r = run("mpk", "run --backend cpu --model tiny --steps 1");
  ::unsetenv("MPK_MEMORY_BUDGET_MIB");
  expect_refused(r, "MPK_MEMORY_BUDGET_MIB must be an integer number of MiB");
}

}  // namespace
}  // namespace mpk::hostile
