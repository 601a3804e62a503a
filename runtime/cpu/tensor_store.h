// Host buffers for every tensor of a Program, as the CPU executor sees them: one
// zero-initialized buffer per activation / cache / scratch / input / output tensor in
// the tensor's dtype (bf16 and f16 as uint16_t bit patterns), and, for weights, the
// caller's Weights memory in its own storage dtype (never copied; converted on read).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/module.h"
#include "runtime/cpu/bf16.h"
#include "runtime/weights/weights.h"

namespace mpk {

struct TensorBuffer {
  DType dtype = DType::kBF16;  // storage dtype
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;  // in elements, row-major
  void* data = nullptr;
  bool read_only = false;  // weights
  int64_t numel = 0;

  float load(int64_t i) const {
    switch (dtype) {
      case DType::kBF16: return bf16_to_f32(static_cast<const uint16_t*>(data)[i]);
      case DType::kF16: return f16_to_f32(static_cast<const uint16_t*>(data)[i]);
      case DType::kF32: return static_cast<const float*>(data)[i];
      case DType::kI32: return static_cast<float>(static_cast<const int32_t*>(data)[i]);
    }
    return 0;
  }
  // Rounds to the storage dtype (nearest even for bf16 / f16).
  void store(int64_t i, float v) {
    switch (dtype) {
      case DType::kBF16: static_cast<uint16_t*>(data)[i] = f32_to_bf16(v); return;
      case DType::kF16: static_cast<uint16_t*>(data)[i] = f32_to_f16(v); return;
      case DType::kF32: static_cast<float*>(data)[i] = v; return;
      case DType::kI32: static_cast<int32_t*>(data)[i] = static_cast<int32_t>(v); return;
    }
  }
  // v as store() would keep it, read back.
  float rounded(float v) const {
    switch (dtype) {
      case DType::kBF16: return bf16_to_f32(f32_to_bf16(v));
      case DType::kF16: return f16_to_f32(f32_to_f16(v));
      case DType::kF32: return v;
      case DType::kI32: return static_cast<float>(static_cast<int32_t>(v));
    }
    return 0;
  }
  int32_t load_i32(int64_t i) const { return static_cast<const int32_t*>(data)[i]; }
  void store_i32(int64_t i, int32_t v) { static_cast<int32_t*>(data)[i] = v; }
  // Loads n consecutive elements starting at i as f32.
  void load_row(int64_t i, int64_t n, float* out) const;
};

class TensorStore {
 public:
  // Binds every weight tensor of `p` to `w` (checked: present, same shape, bf16/f16/f32)
  // and allocates the rest. `w` must outlive the store. Throws mpk::Error naming the
  // largest tensor when the buffers and `w`'s heap bytes exceed the host memory budget
  // (memory_budget.h), before allocating anything.
  TensorStore(const Program& p, const Weights& w);

  TensorBuffer& at(TensorId id) { return bufs_.at(id); }
  const TensorBuffer& at(TensorId id) const { return bufs_.at(id); }
  size_t size() const { return bufs_.size(); }

  // Throws mpk::Error "WRITER writes tensor 'T', which is read-only (...)" when `id` is a
  // weight: the caller's memory, possibly a read-only mapping of a checkpoint. Every
  // writer of a tensor (a task's write regions, an operator's outputs) is checked with
  // this before anything runs.
  void require_writable(TensorId id, const std::string& writer) const;

 private:
  std::vector<TensorBuffer> bufs_;
  std::vector<std::string> names_;
  std::vector<std::unique_ptr<uint64_t[]>> owned_;
};

}  // namespace mpk
