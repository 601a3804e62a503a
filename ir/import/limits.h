// The plausible upper bounds of everything the importer accepts from a config.json and
// from the import options, in one place. A config.json is untrusted input: every size
// field is checked against these before any product of sizes is formed, so no product
// can overflow and everything derived from an accepted config (the module's tensors and
// operators, decompose's tasks, the KV caches) stays bounded.
//
// Each bound has headroom over the largest dense models mpk must accept, Llama 3.1 405B
// (hidden 16384, 126 layers, 128 q / 8 kv heads, head_dim 128, intermediate 53248, vocab
// 128256, 131072 positions, rope_theta 5e5, llama3 factor 8) and Qwen3 235B (hidden 4096,
// 94 layers, 64 q / 4 kv heads, head_dim 128, intermediate 12288, vocab 151936, 40960
// positions, rope_theta 1e6), and over the largest values other public decoder configs use
// (Gemma: head_dim 256, vocab 262144; 1M-10M-token context windows).
#pragma once

#include <cstddef>
#include <cstdint>

namespace mpk {

inline constexpr int64_t kMaxLayers = 256;             // num_hidden_layers (405B: 126)
inline constexpr int64_t kMaxHeads = 256;              // num_attention_heads, num_key_value_heads (405B: 128)
inline constexpr int64_t kMaxHeadDim = 512;            // head_dim (128 typical, Gemma 256)
inline constexpr int64_t kMaxHidden = 65536;           // hidden_size (405B: 16384)
inline constexpr int64_t kMaxIntermediate = 262144;    // intermediate_size (405B: 53248)
inline constexpr int64_t kMaxVocab = int64_t{1} << 20;  // vocab_size (Gemma 3: 262144)
// max_position_embeddings, original_max_position_embeddings, max_seq_len, and so the
// decode steps of a run (405B: 131072; the longest public context windows: 10M).
inline constexpr int64_t kMaxPositions = int64_t{1} << 24;
inline constexpr int64_t kMaxBatch = 16;               // the batch of the decode step
inline constexpr int64_t kMaxChunkRows = 128;          // prompt positions per prefill chunk step (abi::kTcMaxChunkRows)

inline constexpr double kMinRopeTheta = 1;             // rope_theta (real: 1e4 .. 1e7)
inline constexpr double kMaxRopeTheta = 1e12;
inline constexpr double kMaxRopeFactor = 1024;         // llama3 factor, low/high_freq_factor (8, 32; 1, 4)
inline constexpr double kMaxRmsEps = 1;                // rms_norm_eps (real: 1e-5, 1e-6)

// Derived sizes. Parameters: 405B has 4.1e11, the bound 2^41 = 2.2e12. KV caches (k and v
// of every layer, bf16): 405B at batch 8 and 131072 positions needs 0.5 TiB; bound 4 TiB.
inline constexpr int64_t kMaxParameters = int64_t{1} << 41;
inline constexpr int64_t kMaxKvCacheBytes = int64_t{1} << 42;

// _name_or_path, the module's name: Hugging Face names are "org/model", under 100 bytes.
inline constexpr size_t kMaxNameBytes = 1024;

// A config.json is a few KiB; one larger than this is not a model config.
inline constexpr int64_t kMaxConfigBytes = int64_t{4} << 20;
// Deepest JSON nesting of a real config.json (rope_scaling lists are depth 2).
inline constexpr int kMaxConfigDepth = 16;

}  // namespace mpk
