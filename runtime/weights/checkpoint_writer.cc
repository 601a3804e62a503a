// Writes a Hugging Face checkpoint directory (config.json + safetensors, optionally
// sharded with model.safetensors.index.json) for a Module and its weights, so that
// random weights can be exercised through the real checkpoint loading path.
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "ir/architectures.h"
#include "ir/error.h"
#include "ir/file_io.h"
#include "runtime/weights/safetensors.h"
#include "runtime/weights/weights.h"

namespace mpk {
namespace {

using nlohmann::json;

// config.json fields from the module attrs and the first rope operator.
json config_json(const Module& m) {
  const Attrs& a = m.attrs;
  const std::string arch = attr_str(a, "architecture");
  json c;
  c["_name_or_path"] = m.name;
  c["model_type"] = arch;
  const Architecture* known = find_architecture(arch);
  if (!known) throw Error("write_checkpoint: module '" + m.name + "' has unknown architecture \"" + arch + "\"");
  c["architectures"] = {std::string(known->class_name)};
  c["hidden_size"] = attr_int(a, "hidden");
  c["num_hidden_layers"] = attr_int(a, "num_layers");
  c["num_attention_heads"] = attr_int(a, "num_q_heads");
  c["num_key_value_heads"] = attr_int(a, "num_kv_heads");
  c["head_dim"] = attr_int(a, "head_dim");
  c["intermediate_size"] = attr_int(a, "intermediate");
  c["vocab_size"] = attr_int(a, "vocab");
  c["rms_norm_eps"] = attr_float(a, "rms_eps");
  c["tie_word_embeddings"] = attr_int(a, "tied_embeddings") != 0;
  c["max_position_embeddings"] = attr_int(a, "max_seq_len");
  c["hidden_act"] = "silu";
  c["torch_dtype"] = "bfloat16";
  for (const Operator& op : m.program.ops) {
    if (op.kind != OpKind::kRope) continue;
    c["rope_theta"] = attr_float(op.attrs, "theta");
    if (attr_str_or(op.attrs, "rope_type", "default") == "llama3") {
      c["rope_scaling"] = {
          {"rope_type", "llama3"},
          {"factor", attr_float(op.attrs, "factor")},
          {"low_freq_factor", attr_float(op.attrs, "low_freq_factor")},
          {"high_freq_factor", attr_float(op.attrs, "high_freq_factor")},
          {"original_max_position_embeddings",
           attr_int(op.attrs, "original_max_position_embeddings")}};
    }
    break;
  }
  return c;
}

void write_text(const std::filesystem::path& p, const std::string& text) {
  write_file_safely(p.string(), text + "\n");
}

std::string shard_name(int i, int n) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "model-%05d-of-%05d.safetensors", i + 1, n);
  return buf;
}

}  // namespace

void write_checkpoint(const Module& m, const Weights& w, const std::string& dir, int shards) {
  if (shards < 1) throw Error("write_checkpoint: shards must be >= 1, got " + std::to_string(shards));
  check_weights(m, w);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw Error(dir + ": cannot create directory: " + ec.message());
  const std::filesystem::path d(dir);
  write_text(d / "config.json", config_json(m).dump(2));

  std::vector<SafetensorsTensorOut> all;
  int64_t total = 0;
  for (const Tensor& t : m.program.tensors) {
    if (t.role != TensorRole::kWeight) continue;
    const WeightTensor& wt = w.get(t.name);
    all.push_back({t.name, wt.dtype, wt.shape, wt.data});
    total += wt.num_bytes();
  }
  const std::map<std::string, std::string> meta = {{"format", "pt"}};
  if (shards == 1) {
    write_safetensors((d / "model.safetensors").string(), all, meta);
    return;
  }
  // Consecutive tensors, cut when a shard reaches its share of the bytes.
  json weight_map = json::object();
  const int64_t share = (total + shards - 1) / shards;
  std::vector<SafetensorsTensorOut> part;
  int64_t part_bytes = 0;
  int index = 0;
  auto flush = [&] {
    const std::string name = shard_name(index++, shards);
    for (const SafetensorsTensorOut& t : part) weight_map[t.name] = name;
    write_safetensors((d / name).string(), part, meta);
    part.clear();
    part_bytes = 0;
  };
  for (size_t i = 0; i < all.size(); ++i) {
    part.push_back(all[i]);
    part_bytes += w.get(all[i].name).num_bytes();
    const size_t left = all.size() - i - 1;
    const int shards_left = shards - index - 1;
    if (shards_left > 0 && (part_bytes >= share || left == static_cast<size_t>(shards_left)))
      flush();
  }
  while (index < shards) flush();  // the last shard (possibly empty when few tensors)
  json idx = {{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}};
  write_text(d / "model.safetensors.index.json", idx.dump(2));
}

}  // namespace mpk
