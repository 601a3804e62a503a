// Model weights for the executors: a map from Hugging Face tensor name to (dtype, shape,
// pointer). Two sources: a Hugging Face checkpoint directory (config.json plus one or
// more *.safetensors, memory-mapped, never copied or converted: consumers convert on
// read) or deterministic random weights for presets. The GPU runtime uploads from the
// same API: iterate tensors(), copy num_bytes() from data. docs/runtime-cpu.md.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/module.h"

namespace mpk {

struct WeightTensor {
  DType dtype = DType::kBF16;  // storage dtype: bf16, f16 or f32
  std::vector<int64_t> shape;
  const void* data = nullptr;  // row-major, little-endian, valid while the Weights live
  std::string file;            // the safetensors file it came from; "" for random weights

  int64_t num_elements() const;
  int64_t num_bytes() const { return num_elements() * size_of(dtype); }
};

class Weights {
 public:
  Weights() = default;

  // nullptr when absent.
  const WeightTensor* find(const std::string& name) const;
  // Throws mpk::Error naming the tensor and the source when absent.
  const WeightTensor& get(const std::string& name) const;
  const std::map<std::string, WeightTensor>& tensors() const { return tensors_; }
  // "random(seed=7)" or the checkpoint directory.
  const std::string& source() const { return source_; }
  int64_t total_bytes() const;
  // The bytes held in heap memory (random weights, aligned copies), not in mapped files:
  // what counts against the host memory budget (runtime/cpu/memory_budget.h).
  int64_t heap_bytes() const { return heap_bytes_; }

  // Builders (used by the loaders and tests). `owner` keeps `t.data` alive; `on_heap`:
  // the data is heap memory.
  void set_source(std::string s) { source_ = std::move(s); }
  void add(const std::string& name, WeightTensor t, std::shared_ptr<const void> owner,
           bool on_heap = false);

 private:
  std::string source_;
  int64_t heap_bytes_ = 0;
  std::map<std::string, WeightTensor> tensors_;
  std::vector<std::shared_ptr<const void>> owners_;
};

// Loads the weights of every weight tensor of `m`'s Program from a Hugging Face
// checkpoint: `path` is the directory or its config.json. Tensors are found through
// model.safetensors.index.json when present, else in model.safetensors, else in every
// *.safetensors of the directory. Throws mpk::Error naming the file and tensor for a
// missing, truncated or malformed file, a missing tensor, or a shape or dtype (bf16, f16
// and f32 are accepted for any weight) that does not match the config.
Weights load_weights(const Module& m, const std::string& path);

// Deterministic random bf16 weights for every weight tensor of `m`: the same seed gives
// the same bits on every machine. Throws mpk::Error naming the largest tensor when they
// exceed the host memory budget (runtime/cpu/memory_budget.h). Matrices [N, K] are uniform with standard deviation
// 1/sqrt(K) (so activations stay O(1) and logits are O(1) but not degenerate), norm
// weights are uniform in [0.9, 1.1], biases (names ending in ".bias") in [-0.5, 0.5].
Weights random_weights(const Module& m, uint64_t seed);

// Tensor parallel: rank `rank`'s weights of a module sharded by shard-tp (attr tp), cut
// from `full`, the whole model's weights (load_weights or random_weights of the module
// before shard-tp, so that every rank count sees the same model): a weight split on
// dimension d (ir/ops/tensor_parallel.h, tp_split_dim) is the rank's slice of d, the
// others whole. Whole tensors and slices of rows point into `full`, which must outlive
// the result; slices of columns are copied. Throws mpk::Error naming a tensor that is
// missing or whose shape is not its slice's with dimension d times the ranks.
Weights shard_weights(const Module& sharded, const Weights& full, int64_t rank);

// Checks that `w` holds every weight tensor of `m` with its shape and a bf16/f16/f32
// dtype; throws mpk::Error naming the first offender.
void check_weights(const Module& m, const Weights& w);

// Writes a Hugging Face checkpoint directory for `m` with the weights `w`: config.json
// (from the module's attrs and its rope attrs) plus model.safetensors, or, when
// `shards` > 1, model-0000i-of-0000n.safetensors files and model.safetensors.index.json.
// Creates `dir` when missing. Throws mpk::Error on I/O failure.
void write_checkpoint(const Module& m, const Weights& w, const std::string& dir, int shards = 1);

}  // namespace mpk
