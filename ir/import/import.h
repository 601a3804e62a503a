// Model import: a Llama-family decoder description (a Hugging Face config.json or a
// built-in preset) becomes the Program of one decode step, exactly as docs/ir.md
// specifies it (tensor names, shapes, roles, operators, attrs). docs/import.md lists
// the supported configs, fields, presets and rejections.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ir/import/limits.h"
#include "ir/module.h"

namespace mpk {

// A Llama-family decoder (Llama 3.x, Qwen2 / Qwen2.5 or Qwen3).
struct ModelConfig {
  std::string name;          // e.g. "llama-3.2-1b", or the config's _name_or_path / dir name
  std::string architecture;  // "llama" | "qwen2" (a bias on q/k/v) | "qwen3" (per-head q/k RMSNorm)
  int64_t hidden = 0;
  int64_t num_layers = 0;
  int64_t num_q_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t intermediate = 0;
  int64_t vocab = 0;
  double rms_eps = 1e-5;
  double rope_theta = 10000;
  std::string rope_type = "default";  // "default" | "llama3"
  double rope_factor = 1;
  double low_freq_factor = 1;
  double high_freq_factor = 4;
  int64_t original_max_position_embeddings = 0;
  bool tied_embeddings = false;
  int64_t max_position_embeddings = 0;
  // max_seq_len used when ImportOptions::max_seq_len is 0, before the cap by
  // max_position_embeddings: 128 for the tiny presets, 1024 otherwise.
  int64_t default_max_seq_len = 1024;
};

struct ImportOptions {
  int64_t batch = 1;        // 1..kMaxBatch (limits.h)
  int64_t max_seq_len = 0;  // 0: the config's default_max_seq_len, capped by max_position_embeddings
  MachineModel machine;
};

// Parses a Hugging Face config.json object. Throws mpk::Error("<source>: ...") naming
// the missing, mistyped, unsupported or out-of-range field (with its limit, limits.h).
ModelConfig parse_model_config(const nlohmann::json& j, const std::string& source);
// The same for the text of a config.json: bad JSON, or JSON nested deeper than
// kMaxConfigDepth, names `source`.
ModelConfig parse_model_config_text(const std::string& text, const std::string& source);
// Reads (at most kMaxConfigBytes) and parses a config.json file; a missing file or bad
// JSON names the file.
ModelConfig load_model_config(const std::string& path);

// Built-in presets: tiny, tiny-qwen2, tiny-qwen3, llama-3.2-1b, qwen3-8b.
std::vector<std::string> preset_names();
std::optional<ModelConfig> find_preset(const std::string& name);

// The max_seq_len that build_module uses for these options (throws on a bad value).
int64_t resolve_max_seq_len(const ModelConfig& c, const ImportOptions& o);

// Builds the decode-step Program with module attrs, machine model and provenance
// (source as given: "preset:<name>" or a path). Throws mpk::Error on a bad batch or
// max_seq_len, or when the parameters or the KV caches exceed kMaxParameters or
// kMaxKvCacheBytes (limits.h). Does not verify.
Module build_module(const ModelConfig& c, const ImportOptions& o, const std::string& source);

// spec: a preset name | a directory holding config.json | a config.json path.
// Builds the module and runs verify_or_throw on it.
Module import_model(const std::string& spec, const ImportOptions& o);

}  // namespace mpk
