// Tests of Hugging Face config.json parsing: real-looking Llama 3.2 1B, Qwen2.5 0.5B and
// Qwen3 8B configs, RoPE scaling, tied embeddings, every rejection by field name, and
// file errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>

#include "ir/error.h"
#include "ir/import/import.h"

namespace mpk {
namespace {

using nlohmann::json;

const char* kLlama32_1b = R"({
  "architectures": ["LlamaForCausalLM"],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "bos_token_id": 128000,
  "eos_token_id": 128001,
  "head_dim": 64,
  "hidden_act": "silu",
  "hidden_size": 2048,
  "initializer_range": 0.02,
  "intermediate_size": 8192,
  "max_position_embeddings": 131072,
  "mlp_bias": false,
  "model_type": "llama",
  "num_attention_heads": 32,
  "num_hidden_layers": 16,
  "num_key_value_heads": 8,
  "pretraining_tp": 1,
  "rms_norm_eps": 1e-05,
  "rope_scaling": {
    "factor": 32.0,
    "high_freq_factor": 4.0,
    "low_freq_factor": 1.0,
    "original_max_position_embeddings": 8192,
    "rope_type": "llama3"
  },
  "rope_theta": 500000.0,
  "tie_word_embeddings": true,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.45.0.dev0",
  "use_cache": true,
  "vocab_size": 128256
})";

const char* kQwen3_8b = R"({
  "architectures": ["Qwen3ForCausalLM"],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "bos_token_id": 151643,
  "eos_token_id": 151645,
  "head_dim": 128,
  "hidden_act": "silu",
  "hidden_size": 4096,
  "initializer_range": 0.02,
  "intermediate_size": 12288,
  "max_position_embeddings": 40960,
  "max_window_layers": 36,
  "model_type": "qwen3",
  "num_attention_heads": 32,
  "num_hidden_layers": 36,
  "num_key_value_heads": 8,
  "rms_norm_eps": 1e-06,
  "rope_scaling": null,
  "rope_theta": 1000000,
  "sliding_window": null,
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.51.0",
  "use_cache": true,
  "use_sliding_window": false,
  "vocab_size": 151936
})";

// Qwen2.5-0.5B's config.json (no head_dim, no attention_bias: the q/k/v bias is implied).
const char* kQwen25_05b = R"({
  "architectures": ["Qwen2ForCausalLM"],
  "attention_dropout": 0.0,
  "bos_token_id": 151643,
  "eos_token_id": 151643,
  "hidden_act": "silu",
  "hidden_size": 896,
  "initializer_range": 0.02,
  "intermediate_size": 4864,
  "max_position_embeddings": 32768,
  "max_window_layers": 24,
  "model_type": "qwen2",
  "num_attention_heads": 14,
  "num_hidden_layers": 24,
  "num_key_value_heads": 2,
  "rms_norm_eps": 1e-06,
  "rope_theta": 1000000.0,
  "sliding_window": 32768,
  "tie_word_embeddings": true,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.43.1",
  "use_cache": true,
  "use_sliding_window": false,
  "vocab_size": 151936
})";

// Every size and RoPE field, not the name.
void expect_same_model(const ModelConfig& a, const ModelConfig& b) {
  EXPECT_EQ(a.architecture, b.architecture);
  EXPECT_EQ(a.hidden, b.hidden);
  EXPECT_EQ(a.num_layers, b.num_layers);
  EXPECT_EQ(a.num_q_heads, b.num_q_heads);
  EXPECT_EQ(a.num_kv_heads, b.num_kv_heads);
  EXPECT_EQ(a.head_dim, b.head_dim);
  EXPECT_EQ(a.intermediate, b.intermediate);
  EXPECT_EQ(a.vocab, b.vocab);
  EXPECT_DOUBLE_EQ(a.rms_eps, b.rms_eps);
  EXPECT_DOUBLE_EQ(a.rope_theta, b.rope_theta);
  EXPECT_EQ(a.rope_type, b.rope_type);
  EXPECT_DOUBLE_EQ(a.rope_factor, b.rope_factor);
  EXPECT_DOUBLE_EQ(a.low_freq_factor, b.low_freq_factor);
  EXPECT_DOUBLE_EQ(a.high_freq_factor, b.high_freq_factor);
  EXPECT_EQ(a.original_max_position_embeddings, b.original_max_position_embeddings);
  EXPECT_EQ(a.tied_embeddings, b.tied_embeddings);
  EXPECT_EQ(a.max_position_embeddings, b.max_position_embeddings);
}

// Parsing `j` fails with a message naming the source and containing `needle`.
void expect_rejected(const json& j, const std::string& needle) {
  try {
    parse_model_config(j, "cfg.json");
    ADD_FAILURE() << "accepted a config that should fail on " << needle << ": " << j.dump();
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("cfg.json"), std::string::npos) << msg;
    EXPECT_NE(msg.find(needle), std::string::npos) << "message does not name " << needle << ": " << msg;
  }
}

json edited(const char* base, const std::function<void(json&)>& edit) {
  json j = json::parse(base);
  edit(j);
  return j;
}

std::filesystem::path fresh_dir(const std::string& name) {
  auto dir = std::filesystem::path(testing::TempDir()) / ("mpk_import_" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

void write_file(const std::filesystem::path& p, const std::string& text) {
  std::ofstream(p) << text;
}

TEST(ImportConfig, Llama32_1bMatchesPreset) {
  const ModelConfig c = parse_model_config(json::parse(kLlama32_1b), "llama/config.json");
  expect_same_model(c, *find_preset("llama-3.2-1b"));
  EXPECT_EQ(c.architecture, "llama");
  EXPECT_EQ(c.rope_type, "llama3");
  EXPECT_DOUBLE_EQ(c.rope_factor, 32);
  EXPECT_EQ(c.original_max_position_embeddings, 8192);
  EXPECT_TRUE(c.tied_embeddings);
}

TEST(ImportConfig, Qwen3_8bMatchesPreset) {
  const ModelConfig c = parse_model_config(json::parse(kQwen3_8b), "qwen/config.json");
  expect_same_model(c, *find_preset("qwen3-8b"));
  EXPECT_EQ(c.architecture, "qwen3");
  EXPECT_EQ(c.rope_type, "default");
  EXPECT_EQ(c.head_dim, 128);
  EXPECT_FALSE(c.tied_embeddings);
  EXPECT_DOUBLE_EQ(c.rms_eps, 1e-6);
}

TEST(ImportConfig, Qwen25_05b) {
  const ModelConfig c = parse_model_config(json::parse(kQwen25_05b), "qwen2/config.json");
  EXPECT_EQ(c.architecture, "qwen2");
  EXPECT_EQ(c.head_dim, 896 / 14);
  EXPECT_EQ(c.num_kv_heads, 2);
  EXPECT_TRUE(c.tied_embeddings);
  EXPECT_DOUBLE_EQ(c.rope_theta, 1e6);
  EXPECT_EQ(c.rope_type, "default");
  // Qwen2's q/k/v bias does not depend on attention_bias, which transformers' Qwen2
  // ignores: either value imports the same model; untied embeddings are read as such.
  for (const bool b : {true, false})
    expect_same_model(parse_model_config(edited(kQwen25_05b, [&](json& j) { j["attention_bias"] = b; }), "cfg.json"),
                      c);
  EXPECT_FALSE(parse_model_config(edited(kQwen25_05b, [](json& j) { j["tie_word_embeddings"] = false; }), "cfg.json")
                   .tied_embeddings);
  expect_rejected(edited(kQwen25_05b, [](json& j) { j["mlp_bias"] = true; }), "'mlp_bias'");
  expect_rejected(edited(kQwen25_05b, [](json& j) { j["use_sliding_window"] = true; }), "'use_sliding_window'");
  expect_rejected(edited(kQwen25_05b, [](json& j) { j["architectures"] = {"Qwen3ForCausalLM"}; }),
                  "(supported for qwen2: Qwen2ForCausalLM)");
}

TEST(ImportConfig, OptionalFieldsTakeHuggingFaceDefaults) {
  const json j = edited(kLlama32_1b, [](json& j) {
    for (const char* k : {"head_dim", "num_key_value_heads", "tie_word_embeddings", "rope_theta",
                          "rope_scaling", "hidden_act", "attention_bias", "mlp_bias",
                          "architectures"})
      j.erase(k);
  });
  const ModelConfig c = parse_model_config(j, "cfg.json");
  EXPECT_EQ(c.head_dim, 2048 / 32);
  EXPECT_EQ(c.num_kv_heads, 32);
  EXPECT_FALSE(c.tied_embeddings);
  EXPECT_DOUBLE_EQ(c.rope_theta, 10000);
  EXPECT_EQ(c.rope_type, "default");
}

TEST(ImportConfig, RopeScalingForms) {
  // The older "type" key, and an explicit default.
  ModelConfig c = parse_model_config(edited(kLlama32_1b, [](json& j) {
                                       j["rope_scaling"].erase("rope_type");
                                       j["rope_scaling"]["type"] = "llama3";
                                     }),
                                     "cfg.json");
  EXPECT_EQ(c.rope_type, "llama3");
  c = parse_model_config(
      edited(kLlama32_1b, [](json& j) { j["rope_scaling"] = {{"rope_type", "default"}}; }),
      "cfg.json");
  EXPECT_EQ(c.rope_type, "default");
  // transformers 5: rope_parameters holds the theta and the scaling.
  c = parse_model_config(edited(kLlama32_1b,
                                [](json& j) {
                                  json rp = j["rope_scaling"];
                                  rp["rope_theta"] = 250000.0;
                                  j.erase("rope_scaling");
                                  j.erase("rope_theta");
                                  j["rope_parameters"] = rp;
                                }),
                         "cfg.json");
  EXPECT_EQ(c.rope_type, "llama3");
  EXPECT_DOUBLE_EQ(c.rope_theta, 250000);
  EXPECT_DOUBLE_EQ(c.high_freq_factor, 4);
}

TEST(ImportConfig, NameFromNameOrPathElseDirectory) {
  ModelConfig c = parse_model_config(
      edited(kQwen3_8b, [](json& j) { j["_name_or_path"] = "Qwen/Qwen3-8B"; }), "x/config.json");
  EXPECT_EQ(c.name, "Qwen/Qwen3-8B");
  const auto dir = fresh_dir("named-model");
  write_file(dir / "config.json", kQwen3_8b);
  c = load_model_config((dir / "config.json").string());
  EXPECT_EQ(c.name, "mpk_import_named-model");
}

TEST(ImportConfig, RejectsUnsupportedArchitectures) {
  expect_rejected(edited(kLlama32_1b, [](json& j) { j["model_type"] = "mistral"; }),
                  "'model_type' has unsupported value \"mistral\" (supported: llama, qwen2, qwen3)");
  expect_rejected(edited(kLlama32_1b, [](json& j) { j["model_type"] = 3; }), "'model_type'");
  expect_rejected(
      edited(kLlama32_1b, [](json& j) { j["architectures"] = {"MistralForCausalLM"}; }),
      "'architectures'");
  expect_rejected(
      edited(kQwen3_8b, [](json& j) { j["architectures"] = {"LlamaForCausalLM"}; }),
      "'architectures'");
}

TEST(ImportConfig, RejectsUnsupportedFeatures) {
  expect_rejected(edited(kLlama32_1b, [](json& j) { j["rope_scaling"]["rope_type"] = "yarn"; }),
                  "'rope_scaling.rope_type'");
  expect_rejected(edited(kLlama32_1b,
                         [](json& j) {
                           j["rope_scaling"].erase("rope_type");
                           j["rope_scaling"]["type"] = "linear";
                         }),
                  "'rope_scaling.type'");
  expect_rejected(edited(kLlama32_1b, [](json& j) { j["rope_scaling"] = 32; }), "'rope_scaling'");
  expect_rejected(edited(kLlama32_1b, [](json& j) { j["attention_bias"] = true; }),
                  "'attention_bias'");
  expect_rejected(edited(kLlama32_1b, [](json& j) { j["mlp_bias"] = true; }), "'mlp_bias'");
  expect_rejected(edited(kLlama32_1b, [](json& j) { j["hidden_act"] = "gelu"; }), "'hidden_act'");
  expect_rejected(edited(kQwen3_8b,
                         [](json& j) {
                           j["use_sliding_window"] = true;
                           j["sliding_window"] = 4096;
                         }),
                  "'use_sliding_window'");
  expect_rejected(edited(kQwen3_8b,
                         [](json& j) {
                           j["layer_types"] = {"full_attention", "sliding_attention"};
                         }),
                  "'layer_types'");
  expect_rejected(edited(kLlama32_1b, [](json& j) { j["num_key_value_heads"] = 5; }),
                  "'num_key_value_heads'");
  expect_rejected(edited(kLlama32_1b, [](json& j) { j["head_dim"] = 63; }), "'head_dim'");
  expect_rejected(edited(kLlama32_1b,
                         [](json& j) {
                           j.erase("head_dim");
                           j["num_attention_heads"] = 30;
                           j["num_key_value_heads"] = 6;
                         }),
                  "'head_dim'");
  expect_rejected(edited(kLlama32_1b, [](json& j) { j["rope_scaling"]["low_freq_factor"] = 8.0; }),
                  "'rope_scaling.high_freq_factor'");
}

TEST(ImportConfig, RejectsMissingRequiredFields) {
  for (const char* field : {"model_type", "hidden_size", "num_hidden_layers", "num_attention_heads",
                            "intermediate_size", "vocab_size", "rms_norm_eps",
                            "max_position_embeddings"})
    expect_rejected(edited(kLlama32_1b, [&](json& j) { j.erase(field); }),
                    std::string("'") + field + "'");
  expect_rejected(edited(kQwen3_8b, [](json& j) { j.erase("head_dim"); }), "'head_dim'");
  for (const char* field : {"factor", "low_freq_factor", "high_freq_factor",
                            "original_max_position_embeddings"})
    expect_rejected(edited(kLlama32_1b, [&](json& j) { j["rope_scaling"].erase(field); }),
                    std::string("'rope_scaling.") + field + "'");
}

TEST(ImportConfig, RejectsBadValuesByField) {
  expect_rejected(edited(kLlama32_1b, [](json& j) { j["hidden_size"] = "2048"; }), "'hidden_size'");
  expect_rejected(edited(kLlama32_1b, [](json& j) { j["hidden_size"] = 2048.5; }), "'hidden_size'");
  expect_rejected(edited(kLlama32_1b, [](json& j) { j["num_hidden_layers"] = 0; }),
                  "'num_hidden_layers'");
  expect_rejected(edited(kLlama32_1b, [](json& j) { j["vocab_size"] = -1; }), "'vocab_size'");
  expect_rejected(edited(kLlama32_1b, [](json& j) { j["rms_norm_eps"] = 0.0; }), "'rms_norm_eps'");
  expect_rejected(edited(kLlama32_1b, [](json& j) { j["rope_theta"] = "big"; }), "'rope_theta'");
  expect_rejected(edited(kLlama32_1b, [](json& j) { j["tie_word_embeddings"] = "yes"; }),
                  "'tie_word_embeddings'");
  EXPECT_THROW(parse_model_config(json::array({1, 2}), "cfg.json"), Error);
}

// Every size field has a plausible upper bound (ir/import/limits.h) named in the message;
// values beyond int64 and non-integers are named as such.
TEST(ImportConfig, SizesAreBoundedByField) {
  const std::vector<std::pair<const char*, int64_t>> bounds = {
      {"hidden_size", kMaxHidden},           {"num_hidden_layers", kMaxLayers},
      {"num_attention_heads", kMaxHeads},    {"num_key_value_heads", kMaxHeads},
      {"head_dim", kMaxHeadDim},             {"intermediate_size", kMaxIntermediate},
      {"vocab_size", kMaxVocab},             {"max_position_embeddings", kMaxPositions}};
  for (const auto& bound : bounds) {
    const char* field = bound.first;  // named, not bound: clang 14's lambdas cannot capture a binding
    const int64_t max = bound.second;
    const std::string range = "must be in 1.." + std::to_string(max);
    expect_rejected(edited(kLlama32_1b, [&](json& j) { j[field] = max + 1; }),
                    "'" + std::string(field) + "' " + range + ", got " + std::to_string(max + 1));
    expect_rejected(edited(kLlama32_1b, [&](json& j) { j[field] = UINT64_MAX; }),
                    "'" + std::string(field) + "' " + range + ", got 18446744073709551615 (beyond int64)");
    expect_rejected(edited(kLlama32_1b, [&](json& j) { j[field] = 1e30; }),
                    "'" + std::string(field) + "' must be an integer in 1.." + std::to_string(max));
  }
  expect_rejected(edited(kLlama32_1b, [](json& j) { j["rope_scaling"]["original_max_position_embeddings"] = 1 << 25; }),
                  "'rope_scaling.original_max_position_embeddings' must be in 1..16777216");
  expect_rejected(edited(kLlama32_1b, [](json& j) { j["_name_or_path"] = std::string(kMaxNameBytes + 1, 'n'); }),
                  "'_name_or_path' is longer than 1024 bytes");
  // head_dim derived from hidden_size / num_attention_heads is bounded too.
  expect_rejected(edited(kLlama32_1b,
                         [](json& j) {
                           j.erase("head_dim");
                           j["hidden_size"] = 65536;
                           j["num_attention_heads"] = 8;
                         }),
                  "'head_dim' (hidden_size / num_attention_heads = 8192) must be in 1..512");
}

TEST(ImportConfig, NumbersMustBeFiniteAndBounded) {
  for (const char* field : {"rms_norm_eps", "rope_theta"})
    for (double v : {std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN(), 1e300, -1.0})
      expect_rejected(edited(kLlama32_1b, [&](json& j) { j[field] = v; }), std::string("'") + field + "' must be a number in");
  expect_rejected(edited(kLlama32_1b, [](json& j) { j["rope_theta"] = 0.5; }), "'rope_theta' must be a number in [1, 1e+12]");
  for (const char* field : {"factor", "low_freq_factor", "high_freq_factor"})
    expect_rejected(edited(kLlama32_1b, [&](json& j) { j["rope_scaling"][field] = 1e9; }),
                    std::string("'rope_scaling.") + field + "' must be a number in (0, 1024]");
}

// The largest dense models of the two families import, and what they derive is bounded.
TEST(ImportConfig, LargestSupportedModelsImport) {
  const ModelConfig llama405 = parse_model_config(edited(kLlama32_1b,
                                                         [](json& j) {
                                                           j["hidden_size"] = 16384;
                                                           j["num_hidden_layers"] = 126;
                                                           j["num_attention_heads"] = 128;
                                                           j["head_dim"] = 128;
                                                           j["intermediate_size"] = 53248;
                                                           j["tie_word_embeddings"] = false;
                                                           j["rope_scaling"]["factor"] = 8.0;
                                                         }),
                                                  "405b/config.json");
  const ModelConfig qwen235 = parse_model_config(edited(kQwen3_8b,
                                                        [](json& j) {
                                                          j["num_hidden_layers"] = 94;
                                                          j["num_attention_heads"] = 64;
                                                          j["num_key_value_heads"] = 4;
                                                        }),
                                                 "235b/config.json");
  for (const ModelConfig& c : {llama405, qwen235}) {
    ImportOptions o;
    o.batch = kMaxBatch;
    o.max_seq_len = c.max_position_embeddings;
    const Module m = build_module(c, o, c.name);
    EXPECT_EQ(attr_int(m.attrs, "max_seq_len"), c.max_position_embeddings);
  }
}

TEST(ImportConfig, DerivedSizesAreBounded) {
  ModelConfig c = *find_preset("llama-3.2-1b");
  c.max_position_embeddings = kMaxPositions;
  ImportOptions o;
  o.batch = kMaxBatch;
  o.max_seq_len = kMaxPositions;
  c.num_layers = kMaxLayers;
  c.num_kv_heads = c.num_q_heads = kMaxHeads;
  try {
    build_module(c, o, "x");
    ADD_FAILURE() << "accepted KV caches of more than " << kMaxKvCacheBytes << " bytes";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the KV caches need"), std::string::npos) << e.what();
  }
  c = *find_preset("qwen3-8b");
  c.hidden = kMaxHidden;
  c.intermediate = kMaxIntermediate;
  c.num_layers = kMaxLayers;
  try {
    build_module(c, ImportOptions{}, "x");
    ADD_FAILURE() << "accepted more than " << kMaxParameters << " parameters";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("parameter count"), std::string::npos) << e.what();
  }
}

TEST(ImportConfig, DeepOrOversizedFilesAreRefused) {
  const auto dir = fresh_dir("hostile");
  const std::string path = (dir / "config.json").string();
  write_file(path, "{\"model_type\": " + std::string(1000, '[') + std::string(1000, ']') + "}");
  EXPECT_THROW(load_model_config(path), Error);
  write_file(path, std::string(kMaxConfigBytes + 1, ' '));
  try {
    load_model_config(path);
    FAIL() << "oversized config accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("larger than 4 MiB"), std::string::npos) << e.what();
  }
  try {
    parse_model_config_text(R"({"rms_norm_eps": 1e999})", "cfg.json");
    FAIL() << "1e999 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cfg.json: malformed JSON"), std::string::npos) << e.what();
  }
}

TEST(ImportConfig, MalformedJsonNamesTheFile) {
  const auto dir = fresh_dir("malformed");
  const std::string path = (dir / "config.json").string();
  write_file(path, R"({"model_type": "llama", "hidden_size": )");
  try {
    load_model_config(path);
    FAIL() << "malformed JSON accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("JSON"), std::string::npos) << e.what();
  }
}

TEST(ImportConfig, MissingFileNamesTheFile) {
  const std::string path = (fresh_dir("missing") / "config.json").string();
  try {
    load_model_config(path);
    FAIL() << "missing file accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

TEST(ImportConfig, PresetsAreListedAndFound) {
  const std::vector<std::string> names = preset_names();
  EXPECT_EQ(names, (std::vector<std::string>{"tiny", "tiny-qwen2", "tiny-qwen3", "llama-3.2-1b", "qwen3-8b"}));
  for (const std::string& n : names) {
    std::optional<ModelConfig> c = find_preset(n);
    ASSERT_TRUE(c) << n;
    EXPECT_EQ(c->name, n);
    EXPECT_EQ(c->num_q_heads % c->num_kv_heads, 0) << n;
  }
  EXPECT_FALSE(find_preset("llama-70b"));
  const ModelConfig tq = *find_preset("tiny-qwen3");
  EXPECT_EQ(tq.architecture, "qwen3");
  EXPECT_EQ(tq.hidden, find_preset("tiny")->hidden);
  const ModelConfig t2 = *find_preset("tiny-qwen2");
  EXPECT_EQ(t2.architecture, "qwen2");
  EXPECT_EQ(t2.hidden, find_preset("tiny")->hidden);
  EXPECT_TRUE(t2.tied_embeddings);
}

}  // namespace
}  // namespace mpk
