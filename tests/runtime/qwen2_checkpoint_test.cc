// Qwen2 / Qwen2.5 through the real checkpoint path: a Hugging Face directory
// (config.json with model_type qwen2 and Qwen2ForCausalLM, sharded safetensors holding
// the q/k/v biases) written from random weights, imported and loaded back, decodes on the
// CPU under every policy, fused and unfused, bit-identically to the whole-operator
// reference of the module it was written from; a checkpoint without the biases is
// refused, naming one.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "ir/error.h"
#include "passes/policies/policy.h"
#include "runtime/cpu/executor.h"
#include "runtime/cpu/reference.h"
#include "runtime/weights/weights.h"
#include "tests/runtime/runtime_test_util.h"

namespace mpk {
namespace {

void expect_identical(const CpuRunResult& a, const CpuRunResult& b, const std::string& what) {
  ASSERT_EQ(a.tokens, b.tokens) << what;
  ASSERT_EQ(a.logits.size(), b.logits.size()) << what;
  ASSERT_EQ(std::memcmp(a.logits.data(), b.logits.data(), a.logits.size() * sizeof(float)), 0) << what;
}

class Qwen2Checkpoint : public ::testing::TestWithParam<bool> {};

TEST_P(Qwen2Checkpoint, DecodesLikeTheModuleUnderEveryPolicy) {
  ModelConfig c = *find_preset("tiny-qwen2");
  c.tied_embeddings = GetParam();
  const Module m = build_module(c, ImportOptions{}, "test");
  const Weights w = random_weights(m, 5);
  const std::string dir = test::scratch_dir(std::string("qwen2_checkpoint") + (GetParam() ? "_tied" : ""));
  write_checkpoint(m, w, dir, 3);

  const nlohmann::json config = nlohmann::json::parse(std::ifstream(dir + "/config.json"));
  EXPECT_EQ(config.at("model_type"), "qwen2");
  EXPECT_EQ(config.at("architectures"), nlohmann::json::array({"Qwen2ForCausalLM"}));
  const Module from_dir = import_model(dir, ImportOptions{});
  EXPECT_EQ(attr_str(from_dir.attrs, "architecture"), "qwen2");
  const Weights loaded = load_weights(from_dir, dir);
  for (const char* proj : {"q_proj", "k_proj", "v_proj"})
    for (int layer = 0; layer < c.num_layers; ++layer) {
      const std::string name = "model.layers." + std::to_string(layer) + ".self_attn." + proj + ".bias";
      const WeightTensor& t = loaded.get(name);
      ASSERT_EQ(t.num_bytes(), w.get(name).num_bytes()) << name;
      EXPECT_EQ(std::memcmp(t.data, w.get(name).data, t.num_bytes()), 0) << name;
    }
  EXPECT_EQ(loaded.find("model.layers.0.self_attn.o_proj.bias"), nullptr);

  const std::vector<int64_t> prompt = {3, 1, 4};
  const CpuRunResult ref = run_reference(m, w, 12, prompt);
  CpuRunOptions o;
  o.steps = 12;
  o.prompt = prompt;
  for (const PolicyInfo& policy : all_policies())
    for (const std::string& fusions : {std::string(), std::string(kDefaultFusions) + ","}) {
      const Module g = test::compile(from_dir, fusions + test::policy_pipeline(policy.name));
      expect_identical(ref, run_cpu(g, loaded, o), policy.name + (fusions.empty() ? " unfused" : " fused"));
    }
}

TEST(Qwen2CheckpointRefusal, ACheckpointWithoutTheBiases) {
  ModelConfig c = *find_preset("tiny-qwen2");
  c.architecture = "llama";  // the same shapes, no bias
  const Module llama = build_module(c, ImportOptions{}, "test");
  const std::string dir = test::scratch_dir("qwen2_checkpoint_no_bias");
  write_checkpoint(llama, random_weights(llama, 5), dir);
  const Module qwen2 = build_module(*find_preset("tiny-qwen2"), ImportOptions{}, "test");
  try {
    load_weights(qwen2, dir);
    FAIL() << "a checkpoint without the q/k/v biases loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("model.layers.0.self_attn.q_proj.bias"), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Embeddings, Qwen2Checkpoint, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) { return info.param ? "tied" : "untied"; });

}  // namespace
}  // namespace mpk
