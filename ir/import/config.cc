// Hugging Face config.json parsing (Llama 3.x, Qwen2 / Qwen2.5, Qwen3) and the built-in
// presets.
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "ir/architectures.h"
#include "ir/error.h"
#include "ir/file_io.h"
#include "ir/import/import.h"
#include "ir/import/limits.h"
#include "ir/json_brief.h"

namespace mpk {
namespace {

using nlohmann::json;

std::string num_str(double d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", d);
  return buf;
}

// Reads fields of one JSON object, naming `source` and the field in every error.
class FieldReader {
 public:
  FieldReader(const json& j, std::string source, std::string prefix = "")
      : j_(j), source_(std::move(source)), prefix_(std::move(prefix)) {}

  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw Error(source_ + ": field '" + prefix_ + key + "' " + what);
  }

  // Present and not null.
  bool has(const std::string& key) const { return j_.contains(key) && !j_.at(key).is_null(); }
  const json& at(const std::string& key) const { return j_.at(key); }

  // An integer in lo..hi (limits.h). Values beyond int64 and non-integers are named as such.
  int64_t int_in(const std::string& key, int64_t lo, int64_t hi) const {
    if (!has(key)) fail(key, "is required");
    const json& v = j_.at(key);
    const std::string range = std::to_string(lo) + ".." + std::to_string(hi);
    if (!v.is_number_integer()) fail(key, "must be an integer in " + range + ", got " + json_brief(v));
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
      fail(key, "must be in " + range + ", got " + v.dump() + " (beyond int64)");
    const int64_t i = v.get<int64_t>();
    if (i < lo || i > hi) fail(key, "must be in " + range + ", got " + std::to_string(i));
    return i;
  }
  int64_t int_in_or(const std::string& key, int64_t lo, int64_t hi, int64_t fallback) const {
    return has(key) ? int_in(key, lo, hi) : fallback;
  }

  // A finite number in (0, hi], or in [lo, hi] when lo > 0.
  double number_in(const std::string& key, double lo, double hi) const {
    if (!has(key)) fail(key, "is required");
    const json& v = j_.at(key);
    const std::string range = lo > 0 ? "[" + num_str(lo) + ", " + num_str(hi) + "]"
                                     : "(0, " + num_str(hi) + "]";
    if (!v.is_number()) fail(key, "must be a number in " + range + ", got " + json_brief(v));
    const double d = v.get<double>();
    if (!std::isfinite(d) || !(lo > 0 ? d >= lo : d > 0) || d > hi)
      fail(key, "must be a number in " + range + ", got " + v.dump());
    return d;
  }
  double number_in_or(const std::string& key, double lo, double hi, double fallback) const {
    return has(key) ? number_in(key, lo, hi) : fallback;
  }

  bool boolean_or(const std::string& key, bool fallback) const {
    if (!has(key)) return fallback;
    const json& v = j_.at(key);
    if (!v.is_boolean()) fail(key, "must be true or false, got " + json_brief(v));
    return v.get<bool>();
  }

  std::string string_or(const std::string& key, const std::string& fallback) const {
    if (!has(key)) return fallback;
    const json& v = j_.at(key);
    if (!v.is_string()) fail(key, "must be a string, got " + json_brief(v));
    return v.get<std::string>();
  }

  // A field that must be false (or absent) because mpk does not support it.
  void require_false(const std::string& key, const std::string& why) const {
    if (boolean_or(key, false)) fail(key, "is true: " + why + " is not supported");
  }

 private:
  const json& j_;
  std::string source_;
  std::string prefix_;
};


// The model name: _name_or_path, else the directory holding config.json, else the
// file's stem.
std::string name_from(const FieldReader& r, const std::string& source) {
  std::string n = r.string_or("_name_or_path", "");
  if (n.size() > kMaxNameBytes)
    r.fail("_name_or_path", "is longer than " + std::to_string(kMaxNameBytes) + " bytes");
  if (!n.empty()) return n;
  std::filesystem::path p(source);
  if (p.filename() == "config.json" && p.has_parent_path()) {
    std::string dir = std::filesystem::absolute(p).parent_path().filename().string();
    if (!dir.empty()) return dir;
  }
  return p.stem().string();
}

// rope_scaling (or transformers 5's rope_parameters): default or llama3.
void parse_rope(const json& rope, const std::string& field, const std::string& source,
                ModelConfig& c) {
  if (!rope.is_object())
    throw Error(source + ": field '" + field + "' must be an object or null, got " + json_brief(rope));
  FieldReader r(rope, source, field + ".");
  std::string type = r.string_or("rope_type", r.string_or("type", "default"));
  if (type == "default") {
    c.rope_type = "default";
    return;
  }
  if (type != "llama3")
    r.fail(r.has("rope_type") ? "rope_type" : "type",
           "has unsupported value " + json_brief(type) + " (supported: default, llama3)");
  c.rope_type = "llama3";
  c.rope_factor = r.number_in("factor", 0, kMaxRopeFactor);
  c.low_freq_factor = r.number_in("low_freq_factor", 0, kMaxRopeFactor);
  c.high_freq_factor = r.number_in("high_freq_factor", 0, kMaxRopeFactor);
  c.original_max_position_embeddings =
      r.int_in("original_max_position_embeddings", 1, kMaxPositions);
  if (!(c.high_freq_factor > c.low_freq_factor))
    r.fail("high_freq_factor", "must be greater than low_freq_factor");
}

}  // namespace

ModelConfig parse_model_config(const json& j, const std::string& source) {
  if (!j.is_object()) throw Error(source + ": config must be a JSON object");
  FieldReader r(j, source);
  ModelConfig c;

  // Architecture: model_type decides; architectures, when present, must agree.
  if (!r.has("model_type")) r.fail("model_type", "is required");
  const std::string model_type = r.string_or("model_type", "");
  const Architecture* arch = find_architecture(model_type);
  if (!arch)
    r.fail("model_type",
           "has unsupported value " + json_brief(model_type) + " (supported: " + architecture_names() + ")");
  c.architecture = arch->name;
  if (r.has("architectures")) {
    const json& list = r.at("architectures");
    if (!list.is_array()) r.fail("architectures", "must be a list of strings");
    for (const json& a : list)
      if (!a.is_string() || a.get<std::string>() != arch->class_name)
        r.fail("architectures", "has unsupported entry " + json_brief(a) + " (supported for " + model_type + ": " +
                                    std::string(arch->class_name) + ")");
  }

  c.name = name_from(r, source);
  c.hidden = r.int_in("hidden_size", 1, kMaxHidden);
  c.num_layers = r.int_in("num_hidden_layers", 1, kMaxLayers);
  c.num_q_heads = r.int_in("num_attention_heads", 1, kMaxHeads);
  c.num_kv_heads = r.int_in_or("num_key_value_heads", 1, kMaxHeads, c.num_q_heads);
  if (c.num_q_heads % c.num_kv_heads != 0)
    r.fail("num_key_value_heads", "(" + std::to_string(c.num_kv_heads) +
                                      ") must divide num_attention_heads (" +
                                      std::to_string(c.num_q_heads) + ")");
  if (c.architecture == "qwen3") {
    c.head_dim = r.int_in("head_dim", 1, kMaxHeadDim);
  } else if (r.has("head_dim")) {
    c.head_dim = r.int_in("head_dim", 1, kMaxHeadDim);
  } else {
    if (c.hidden % c.num_q_heads != 0)
      r.fail("head_dim", "is required when hidden_size is not a multiple of num_attention_heads");
    c.head_dim = c.hidden / c.num_q_heads;
    if (c.head_dim > kMaxHeadDim)
      r.fail("head_dim", "(hidden_size / num_attention_heads = " + std::to_string(c.head_dim) +
                             ") must be in 1.." + std::to_string(kMaxHeadDim));
  }
  if (c.head_dim % 2 != 0) r.fail("head_dim", "must be even for rotary embeddings");
  c.intermediate = r.int_in("intermediate_size", 1, kMaxIntermediate);
  c.vocab = r.int_in("vocab_size", 1, kMaxVocab);
  c.rms_eps = r.number_in("rms_norm_eps", 0, kMaxRmsEps);
  c.max_position_embeddings = r.int_in("max_position_embeddings", 1, kMaxPositions);
  c.tied_embeddings = r.boolean_or("tie_word_embeddings", false);

  // Features mpk does not implement are rejected, not ignored.
  const std::string act = r.string_or("hidden_act", "silu");
  if (act != "silu") r.fail("hidden_act", "has unsupported value " + json_brief(act) + " (supported: silu)");
  // A family with a q/k/v bias (Qwen2) has it, and none on o, whatever attention_bias
  // says (transformers' Qwen2Attention does not read the field); elsewhere attention_bias
  // would put a bias on o_proj too.
  if (!arch->qkv_bias) r.require_false("attention_bias", "a bias on q/k/v/o projections");
  r.require_false("mlp_bias", "a bias on MLP projections");
  r.require_false("use_sliding_window", "sliding-window attention");
  if (r.has("layer_types")) {
    const json& types = r.at("layer_types");
    if (!types.is_array()) r.fail("layer_types", "must be a list of strings");
    for (const json& t : types)
      if (!t.is_string() || t.get<std::string>() != "full_attention")
        r.fail("layer_types", "has unsupported entry " + json_brief(t) + " (supported: full_attention)");
  }

  // RoPE: rope_theta + rope_scaling (transformers 4), or rope_parameters holding both.
  c.rope_theta = r.number_in_or("rope_theta", kMinRopeTheta, kMaxRopeTheta, 10000.0);
  if (r.has("rope_parameters")) {
    const json& rp = r.at("rope_parameters");
    if (rp.is_object() && rp.contains("rope_theta") && !rp.at("rope_theta").is_null())
      c.rope_theta = FieldReader(rp, source, "rope_parameters.")
                         .number_in("rope_theta", kMinRopeTheta, kMaxRopeTheta);
    parse_rope(rp, "rope_parameters", source, c);
  } else if (r.has("rope_scaling")) {
    parse_rope(r.at("rope_scaling"), "rope_scaling", source, c);
  }
  return c;
}

ModelConfig parse_model_config_text(const std::string& text, const std::string& source) {
  json j;
  try {
    auto depth_guard = [&](int depth, json::parse_event_t, json&) {
      if (depth > kMaxConfigDepth)
        throw Error(source + ": malformed config: JSON nested deeper than " +
                    std::to_string(kMaxConfigDepth) + " levels");
      return true;
    };
    j = json::parse(text, depth_guard);
  } catch (const json::parse_error& e) {
    throw Error(source + ": malformed JSON at byte " + std::to_string(e.byte) + ": " +
                text_brief(e.what(), kMaxParserMessage));
  } catch (const json::exception& e) {  // e.g. a number beyond double's range
    throw Error(source + ": malformed JSON: " + text_brief(e.what(), kMaxParserMessage));
  }
  return parse_model_config(j, source);
}

ModelConfig load_model_config(const std::string& path) {
  return parse_model_config_text(read_file_bounded(path, kMaxConfigBytes, "model config"), path);
}

namespace {

ModelConfig tiny_llama() {
  ModelConfig c;
  c.name = "tiny";
  c.architecture = "llama";
  c.hidden = 256;
  c.num_layers = 2;
  c.num_q_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = 64;
  c.intermediate = 512;
  c.vocab = 512;
  c.rms_eps = 1e-5;
  c.rope_theta = 10000;
  c.tied_embeddings = false;
  c.max_position_embeddings = 2048;
  c.default_max_seq_len = 128;
  return c;
}

ModelConfig tiny_qwen3() {
  ModelConfig c = tiny_llama();
  c.name = "tiny-qwen3";
  c.architecture = "qwen3";
  return c;
}

ModelConfig llama_3_2_1b() {
  ModelConfig c;
  c.name = "llama-3.2-1b";
  c.architecture = "llama";
  c.hidden = 2048;
  c.num_layers = 16;
  c.num_q_heads = 32;
  c.num_kv_heads = 8;
  c.head_dim = 64;
  c.intermediate = 8192;
  c.vocab = 128256;
  c.rms_eps = 1e-5;
  c.rope_theta = 500000;
  c.rope_type = "llama3";
  c.rope_factor = 32;
  c.low_freq_factor = 1;
  c.high_freq_factor = 4;
  c.original_max_position_embeddings = 8192;
  c.tied_embeddings = true;
  c.max_position_embeddings = 131072;
  return c;
}

ModelConfig qwen3_8b() {
  ModelConfig c;
  c.name = "qwen3-8b";
  c.architecture = "qwen3";
  c.hidden = 4096;
  c.num_layers = 36;
  c.num_q_heads = 32;
  c.num_kv_heads = 8;
  c.head_dim = 128;
  c.intermediate = 12288;
  c.vocab = 151936;
  c.rms_eps = 1e-6;
  c.rope_theta = 1000000;
  c.tied_embeddings = false;
  c.max_position_embeddings = 40960;
  return c;
}

// Qwen2.5-0.5B's choices at the tiny size: q/k/v bias, tied embeddings, theta 1e6, eps 1e-6.
ModelConfig tiny_qwen2() {
  ModelConfig c = tiny_llama();
  c.name = "tiny-qwen2";
  c.architecture = "qwen2";
  c.rope_theta = 1000000;
  c.rms_eps = 1e-6;
  c.tied_embeddings = true;
  return c;
}

}  // namespace

std::vector<std::string> preset_names() { return {"tiny", "tiny-qwen2", "tiny-qwen3", "llama-3.2-1b", "qwen3-8b"}; }

std::optional<ModelConfig> find_preset(const std::string& name) {
  if (name == "tiny") return tiny_llama();
  if (name == "tiny-qwen2") return tiny_qwen2();
  if (name == "tiny-qwen3") return tiny_qwen3();
  if (name == "llama-3.2-1b") return llama_3_2_1b();
  if (name == "qwen3-8b") return qwen3_8b();
  return std::nullopt;
}

}  // namespace mpk
