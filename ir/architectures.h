// The model families mpk imports, in one table: the module attr `architecture`, the
// Hugging Face config.json `model_type`, the transformers class its `architectures`
// lists, and what the family's decoder layer has beyond Llama's. The importer
// (ir/import/config.cc) accepts them and ir/import/build.cc builds a layer from the
// flags; the verifier checks a module's attr against them and the checkpoint writer
// names the class from them (docs/import.md).
#pragma once

#include <string>
#include <string_view>

namespace mpk {

struct Architecture {
  std::string_view name;        // module attr `architecture`, config.json `model_type`
  std::string_view class_name;  // config.json `architectures` entry
  bool qkv_bias;                // q/k/v_proj carry a bias (linear(x, W, bias){bias=1}); o_proj none
  bool qk_norm;                 // per-head RMSNorm of q and k before RoPE (qk_norm operators)
};

inline constexpr Architecture kArchitectures[] = {
    {"llama", "LlamaForCausalLM", false, false},  // Llama 3.x; optional llama3 RoPE scaling
    {"qwen2", "Qwen2ForCausalLM", true, false},   // Qwen2 and Qwen2.5
    {"qwen3", "Qwen3ForCausalLM", false, true},
};

// nullptr when `name` is none of them.
inline const Architecture* find_architecture(std::string_view name) {
  for (const Architecture& a : kArchitectures)
    if (a.name == name) return &a;
  return nullptr;
}

// "llama, qwen2, qwen3".
inline std::string architecture_names() {
  std::string s;
  for (const Architecture& a : kArchitectures) s += (s.empty() ? "" : ", ") + std::string(a.name);
  return s;
}

}  // namespace mpk
