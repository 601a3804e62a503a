// Tests of the Program that import builds (docs/ir.md): tensor and operator counts,
// shapes, dtypes and roles per preset, qwen2's q/k/v biases, qwen3's q/k norms, tied
// lm_head, batch > 1, max_seq_len rules, invalid batch, and import_model's spec
// resolution.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "ir/error.h"
#include "ir/import/import.h"

namespace mpk {
namespace {

using Shape = std::vector<int64_t>;

Module build(const std::string& preset, int64_t batch = 1, int64_t seq = 0) {
  ImportOptions o;
  o.batch = batch;
  o.max_seq_len = seq;
  return build_module(*find_preset(preset), o, "preset:" + preset);
}

const Tensor& tensor(const Module& m, const std::string& name) {
  const TensorId id = m.program.find_tensor(name);
  if (id < 0) throw Error("no tensor " + name);
  return m.program.tensor(id);
}

const Operator& op(const Module& m, const std::string& name) {
  const OpId id = m.program.find_op(name);
  if (id < 0) throw Error("no operator " + name);
  return m.program.ops[id];
}

std::vector<std::string> names(const Module& m, const std::vector<TensorId>& ids) {
  std::vector<std::string> out;
  for (TensorId t : ids) out.push_back(m.program.tensor(t).name);
  return out;
}

class ImportBuildPreset : public testing::TestWithParam<std::string> {};

TEST_P(ImportBuildPreset, CountsShapesAndRolesFollowTheSpec) {
  const ModelConfig c = *find_preset(GetParam());
  const Module m = build(GetParam());
  const bool qwen = c.architecture == "qwen3", biased = c.architecture == "qwen2";
  const int64_t L = c.num_layers, H = c.hidden, hd = c.head_dim, I = c.intermediate;
  const int64_t qd = c.num_q_heads * hd, kvd = c.num_kv_heads * hd;
  const int64_t S = m.attrs.count("max_seq_len") ? attr_int(m.attrs, "max_seq_len") : -1;

  // tokens, embedding, h.0; per layer 9 weights + 15 activations + 2 caches (qwen3: +2
  // norm weights, +2 normed activations; qwen2: +3 biases); final norm weight, xf,
  // logits, lm_head.weight.
  const int64_t per_layer_tensors = qwen ? 30 : biased ? 29 : 26;
  EXPECT_EQ(static_cast<int64_t>(m.program.tensors.size()),
            3 + L * per_layer_tensors + 3 + (c.tied_embeddings ? 0 : 1));
  EXPECT_EQ(static_cast<int64_t>(m.program.ops.size()), 1 + L * (qwen ? 18 : 16) + 3);

  EXPECT_EQ(tensor(m, "tokens").dtype, DType::kI32);
  EXPECT_EQ(tensor(m, "tokens").role, TensorRole::kInput);
  EXPECT_EQ(tensor(m, "tokens").shape, Shape({1}));
  EXPECT_EQ(tensor(m, "logits").dtype, DType::kF32);
  EXPECT_EQ(tensor(m, "logits").role, TensorRole::kOutput);
  EXPECT_EQ(tensor(m, "logits").shape, Shape({1, c.vocab}));
  EXPECT_EQ(tensor(m, "model.embed_tokens.weight").shape, Shape({c.vocab, H}));
  EXPECT_EQ(tensor(m, "model.norm.weight").shape, Shape({H}));
  EXPECT_EQ(tensor(m, "xf").shape, Shape({1, H}));
  EXPECT_EQ(tensor(m, "h." + std::to_string(L)).shape, Shape({1, H}));

  for (int64_t l = 0; l < L; ++l) {
    const std::string w = "model.layers." + std::to_string(l) + ".";
    const std::string n = "." + std::to_string(l);
    EXPECT_EQ(tensor(m, w + "input_layernorm.weight").shape, Shape({H}));
    EXPECT_EQ(tensor(m, w + "post_attention_layernorm.weight").shape, Shape({H}));
    EXPECT_EQ(tensor(m, w + "self_attn.q_proj.weight").shape, Shape({qd, H}));
    EXPECT_EQ(tensor(m, w + "self_attn.k_proj.weight").shape, Shape({kvd, H}));
    EXPECT_EQ(tensor(m, w + "self_attn.v_proj.weight").shape, Shape({kvd, H}));
    EXPECT_EQ(tensor(m, w + "self_attn.o_proj.weight").shape, Shape({H, qd}));
    EXPECT_EQ(tensor(m, w + "mlp.gate_proj.weight").shape, Shape({I, H}));
    EXPECT_EQ(tensor(m, w + "mlp.up_proj.weight").shape, Shape({I, H}));
    EXPECT_EQ(tensor(m, w + "mlp.down_proj.weight").shape, Shape({H, I}));
    EXPECT_EQ(m.program.find_tensor(w + "self_attn.q_proj.bias") >= 0, biased);
    if (biased) {
      EXPECT_EQ(tensor(m, w + "self_attn.q_proj.bias").shape, Shape({qd}));
      EXPECT_EQ(tensor(m, w + "self_attn.k_proj.bias").shape, Shape({kvd}));
      EXPECT_EQ(tensor(m, w + "self_attn.v_proj.bias").shape, Shape({kvd}));
    }
    for (const char* a : {"h_mid", "xn", "xn2", "o", "down"})
      EXPECT_EQ(tensor(m, a + n).shape, Shape({1, H})) << a << n;
    for (const char* a : {"q", "qr", "attn"}) EXPECT_EQ(tensor(m, a + n).shape, Shape({1, qd}));
    for (const char* a : {"k", "kr", "v"}) EXPECT_EQ(tensor(m, a + n).shape, Shape({1, kvd}));
    for (const char* a : {"gate", "up", "act"}) EXPECT_EQ(tensor(m, a + n).shape, Shape({1, I}));
    for (const char* a : {"k_cache", "v_cache"}) {
      EXPECT_EQ(tensor(m, a + n).shape, Shape({1, S, c.num_kv_heads, hd}));
      EXPECT_EQ(tensor(m, a + n).role, TensorRole::kKvCache);
    }
    EXPECT_EQ(m.program.find_op("L" + std::to_string(l) + ".q_norm") >= 0, qwen);
    EXPECT_EQ(m.program.find_op("L" + std::to_string(l) + ".k_norm") >= 0, qwen);
    if (qwen) {
      EXPECT_EQ(tensor(m, w + "self_attn.q_norm.weight").shape, Shape({hd}));
      EXPECT_EQ(tensor(m, "qn" + n).shape, Shape({1, qd}));
      EXPECT_EQ(tensor(m, "kn" + n).shape, Shape({1, kvd}));
    }
  }
  for (const Tensor& t : m.program.tensors) {
    EXPECT_NE(t.role, TensorRole::kScratch) << t.name;
    if (t.role == TensorRole::kWeight) {
      EXPECT_EQ(t.dtype, DType::kBF16) << t.name;
    }
  }
}

TEST_P(ImportBuildPreset, ProgramOrderIsSequentiallyValid) {
  // Every activation an operator reads is written by an earlier operator; every
  // activation is written exactly once.
  const Module m = build(GetParam());
  std::vector<int> written(m.program.tensors.size(), 0);
  for (const Operator& o : m.program.ops) {
    for (TensorId t : o.inputs) {
      if (m.program.tensor(t).role == TensorRole::kActivation) {
        EXPECT_EQ(written[t], 1) << o.name << " reads " << m.program.tensor(t).name;
      }
    }
    for (TensorId t : o.outputs) ++written[t];
  }
  for (size_t t = 0; t < written.size(); ++t) {
    const Tensor& tt = m.program.tensors[t];
    EXPECT_EQ(written[t], tt.role == TensorRole::kWeight ? 0 : 1) << tt.name;
  }
  EXPECT_EQ(m.program.ops.front().name, "embed");
  EXPECT_EQ(m.program.ops.back().name, "argmax");
  ASSERT_EQ(m.program.writers.size(), m.program.tensors.size());
}

INSTANTIATE_TEST_SUITE_P(Presets, ImportBuildPreset,
                         testing::Values("tiny", "tiny-qwen2", "tiny-qwen3", "llama-3.2-1b", "qwen3-8b"),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& ch : s)
                             if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return s;
                         });

TEST(ImportBuild, LayerWiringAndOperatorKinds) {
  const Module m = build("tiny-qwen3");
  EXPECT_EQ(names(m, op(m, "embed").inputs),
            (std::vector<std::string>{"model.embed_tokens.weight", "tokens"}));
  EXPECT_EQ(op(m, "L1.q_norm").kind, OpKind::kQkNorm);
  EXPECT_EQ(names(m, op(m, "L1.q_norm").inputs),
            (std::vector<std::string>{"q.1", "model.layers.1.self_attn.q_norm.weight"}));
  EXPECT_EQ(names(m, op(m, "L1.k_rope").inputs), (std::vector<std::string>{"kn.1"}));
  EXPECT_EQ(names(m, op(m, "L1.kv_append").inputs), (std::vector<std::string>{"kr.1", "v.1"}));
  EXPECT_EQ(names(m, op(m, "L1.kv_append").outputs),
            (std::vector<std::string>{"k_cache.1", "v_cache.1"}));
  EXPECT_EQ(names(m, op(m, "L1.attention").inputs),
            (std::vector<std::string>{"qr.1", "k_cache.1", "v_cache.1"}));
  EXPECT_EQ(names(m, op(m, "L1.attn_residual").inputs), (std::vector<std::string>{"h.1", "o.1"}));
  EXPECT_EQ(names(m, op(m, "L1.mlp_residual").outputs), (std::vector<std::string>{"h.2"}));
  EXPECT_EQ(names(m, op(m, "argmax").outputs), (std::vector<std::string>{"tokens"}));
  EXPECT_EQ(op(m, "L1.silu_mul").kind, OpKind::kSiluMul);
  EXPECT_EQ(op(m, "lm_head").kind, OpKind::kLmHead);
  EXPECT_EQ(op(m, "L0.gate_proj").kind, OpKind::kLinear);
  EXPECT_EQ(op(m, "L0.gate_proj").layer, 0);
  EXPECT_EQ(op(m, "L1.down_proj").layer, 1);
  EXPECT_EQ(op(m, "final_norm").layer, -1);
  EXPECT_EQ(op(m, "embed").layer, -1);
  // A llama layer has no q/k norm: rope reads the projections directly.
  const Module l = build("tiny");
  EXPECT_EQ(names(l, op(l, "L0.q_rope").inputs), (std::vector<std::string>{"q.0"}));
  EXPECT_LT(l.program.find_tensor("qn.0"), 0);
}

// Qwen2: q, k and v are linear(x, W, bias){bias=1}; o_proj and the MLP have no bias.
TEST(ImportBuild, Qwen2ProjectionsCarryABias) {
  const Module m = build("tiny-qwen2");
  for (const char* proj : {"q_proj", "k_proj", "v_proj"}) {
    const Operator& o = op(m, std::string("L1.") + proj);
    const std::string w = std::string("model.layers.1.self_attn.") + proj;
    EXPECT_EQ(names(m, o.inputs), (std::vector<std::string>{"xn.1", w + ".weight", w + ".bias"})) << proj;
    EXPECT_EQ(attr_int(o.attrs, "bias"), 1) << proj;
  }
  for (const char* proj : {"o_proj", "gate_proj", "up_proj", "down_proj"}) {
    EXPECT_EQ(op(m, std::string("L0.") + proj).inputs.size(), 2u) << proj;
    EXPECT_TRUE(op(m, std::string("L0.") + proj).attrs.empty()) << proj;
  }
  EXPECT_LT(m.program.find_op("L0.q_norm"), 0);
  EXPECT_EQ(attr_str(m.attrs, "architecture"), "qwen2");
  EXPECT_EQ(attr_int(m.attrs, "tied_embeddings"), 1);
}

TEST(ImportBuild, OperatorAttrs) {
  const Module m = build("llama-3.2-1b");
  const Attrs& rope = op(m, "L3.q_rope").attrs;
  EXPECT_EQ(attr_str(rope, "rope_type"), "llama3");
  EXPECT_EQ(attr_int(rope, "head_dim"), 64);
  EXPECT_DOUBLE_EQ(attr_float(rope, "theta"), 500000);
  EXPECT_DOUBLE_EQ(attr_float(rope, "factor"), 32);
  EXPECT_DOUBLE_EQ(attr_float(rope, "low_freq_factor"), 1);
  EXPECT_DOUBLE_EQ(attr_float(rope, "high_freq_factor"), 4);
  EXPECT_EQ(attr_int(rope, "original_max_position_embeddings"), 8192);
  const Attrs& at = op(m, "L3.attention").attrs;
  EXPECT_EQ(attr_int(at, "num_q_heads"), 32);
  EXPECT_EQ(attr_int(at, "num_kv_heads"), 8);
  EXPECT_EQ(attr_int(at, "head_dim"), 64);
  EXPECT_DOUBLE_EQ(attr_float(at, "scale"), 1.0 / 8.0);
  EXPECT_DOUBLE_EQ(attr_float(op(m, "L0.post_norm").attrs, "eps"), 1e-5);

  const Module q = build("qwen3-8b");
  const Attrs& qr = op(q, "L0.k_rope").attrs;
  EXPECT_EQ(attr_str(qr, "rope_type"), "default");
  EXPECT_EQ(qr.count("factor"), 0u);
  EXPECT_DOUBLE_EQ(attr_float(qr, "theta"), 1e6);
  EXPECT_DOUBLE_EQ(attr_float(op(q, "L0.q_norm").attrs, "eps"), 1e-6);
  EXPECT_EQ(attr_int(op(q, "L0.k_norm").attrs, "head_dim"), 128);
  EXPECT_DOUBLE_EQ(attr_float(op(q, "L0.attention").attrs, "scale"), 1.0 / std::sqrt(128.0));
  EXPECT_TRUE(op(q, "L0.o_proj").attrs.empty());
}

TEST(ImportBuild, ModuleAttrsMachineAndProvenance) {
  ImportOptions o;
  o.batch = 2;
  o.machine.sm_count = 78;
  const Module m = build_module(*find_preset("qwen3-8b"), o, "some/config.json");
  EXPECT_EQ(m.name, "qwen3-8b");
  EXPECT_EQ(attr_str(m.attrs, "architecture"), "qwen3");
  EXPECT_EQ(attr_int(m.attrs, "batch"), 2);
  EXPECT_EQ(attr_int(m.attrs, "max_seq_len"), 1024);
  EXPECT_EQ(attr_int(m.attrs, "num_layers"), 36);
  EXPECT_EQ(attr_int(m.attrs, "hidden"), 4096);
  EXPECT_EQ(attr_int(m.attrs, "num_q_heads"), 32);
  EXPECT_EQ(attr_int(m.attrs, "num_kv_heads"), 8);
  EXPECT_EQ(attr_int(m.attrs, "head_dim"), 128);
  EXPECT_EQ(attr_int(m.attrs, "intermediate"), 12288);
  EXPECT_EQ(attr_int(m.attrs, "vocab"), 151936);
  EXPECT_EQ(attr_int(m.attrs, "tied_embeddings"), 0);
  EXPECT_DOUBLE_EQ(attr_float(m.attrs, "rms_eps"), 1e-6);
  EXPECT_EQ(m.attrs.size(), 12u);
  EXPECT_EQ(m.machine.sm_count, 78);
  EXPECT_EQ(m.provenance.source, "some/config.json");
  EXPECT_EQ(m.provenance.tool_version, tool_version());
  EXPECT_TRUE(m.provenance.pipeline.empty());
  EXPECT_TRUE(m.graph.empty());
}

TEST(ImportBuild, TiedLmHeadReadsTheEmbedding) {
  const Module m = build("llama-3.2-1b");
  EXPECT_LT(m.program.find_tensor("lm_head.weight"), 0);
  EXPECT_EQ(names(m, op(m, "lm_head").inputs),
            (std::vector<std::string>{"xf", "model.embed_tokens.weight"}));
  EXPECT_EQ(attr_int(m.attrs, "tied_embeddings"), 1);
  const Module u = build("tiny");
  EXPECT_EQ(names(u, op(u, "lm_head").inputs), (std::vector<std::string>{"xf", "lm_head.weight"}));
  EXPECT_EQ(tensor(u, "lm_head.weight").shape, Shape({512, 256}));
}

TEST(ImportBuild, BatchShapes) {
  const Module m = build("tiny-qwen3", 8);
  EXPECT_EQ(tensor(m, "tokens").shape, Shape({8}));
  EXPECT_EQ(tensor(m, "h.0").shape, Shape({8, 256}));
  EXPECT_EQ(tensor(m, "qn.1").shape, Shape({8, 256}));
  EXPECT_EQ(tensor(m, "kr.1").shape, Shape({8, 128}));
  EXPECT_EQ(tensor(m, "gate.0").shape, Shape({8, 512}));
  EXPECT_EQ(tensor(m, "k_cache.0").shape, Shape({8, 128, 2, 64}));
  EXPECT_EQ(tensor(m, "logits").shape, Shape({8, 512}));
  // Weights do not depend on the batch.
  EXPECT_EQ(tensor(m, "model.layers.0.mlp.down_proj.weight").shape, Shape({256, 512}));
}

TEST(ImportBuild, RejectsInvalidBatchByName) {
  for (int64_t b : {0, -1, 17, 64}) {
    try {
      build("tiny", b);
      ADD_FAILURE() << "batch " << b << " accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("batch"), std::string::npos) << e.what();
    }
  }
}

TEST(ImportBuild, MaxSeqLenDefaultsAndLimits) {
  EXPECT_EQ(attr_int(build("tiny").attrs, "max_seq_len"), 128);
  EXPECT_EQ(attr_int(build("tiny-qwen3").attrs, "max_seq_len"), 128);
  EXPECT_EQ(attr_int(build("llama-3.2-1b").attrs, "max_seq_len"), 1024);
  EXPECT_EQ(attr_int(build("tiny", 1, 300).attrs, "max_seq_len"), 300);
  EXPECT_EQ(tensor(build("tiny", 2, 300), "v_cache.1").shape, Shape({2, 300, 2, 64}));
  ModelConfig small = *find_preset("qwen3-8b");
  small.max_position_embeddings = 512;
  EXPECT_EQ(resolve_max_seq_len(small, {}), 512);  // default capped
  ImportOptions o;
  o.max_seq_len = 513;
  EXPECT_THROW(resolve_max_seq_len(small, o), Error);
  o.max_seq_len = -4;
  try {
    build_module(small, o, "x");
    FAIL() << "negative max_seq_len accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("max_seq_len"), std::string::npos) << e.what();
  }
}

TEST(ImportModel, ResolvesPresetDirectoryAndFile) {
  const Module p = import_model("tiny", {});
  EXPECT_EQ(p.provenance.source, "preset:tiny");
  EXPECT_EQ(p.name, "tiny");

  const auto dir = std::filesystem::path(testing::TempDir()) / "mpk_import_model_dir";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config.json") << R"({"model_type": "qwen3", "architectures": ["Qwen3ForCausalLM"],
    "hidden_size": 128, "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1,
    "head_dim": 64, "intermediate_size": 256, "vocab_size": 300, "rms_norm_eps": 1e-6,
    "max_position_embeddings": 64, "rope_theta": 1000000})";
  const Module d = import_model(dir.string(), {});
  EXPECT_EQ(d.provenance.source, (dir / "config.json").string());
  EXPECT_EQ(attr_int(d.attrs, "max_seq_len"), 64);  // capped by max_position_embeddings
  EXPECT_GE(d.program.find_op("L0.k_norm"), 0);
  const Module f = import_model((dir / "config.json").string(), {});
  EXPECT_EQ(f.program.tensors.size(), d.program.tensors.size());

  try {
    import_model((dir / "nothing-here").string(), {});
    FAIL() << "missing spec accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("nothing-here"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace mpk
