// TensorStore: buffer allocation and weight binding.
#include "runtime/cpu/tensor_store.h"

#include <algorithm>

#include "ir/checked.h"
#include "ir/region.h"
#include "ir/error.h"
#include "runtime/cpu/memory_budget.h"

namespace mpk {

void TensorBuffer::load_row(int64_t i, int64_t n, float* out) const {
  switch (dtype) {
    case DType::kBF16: {
      const uint16_t* p = static_cast<const uint16_t*>(data) + i;
      for (int64_t j = 0; j < n; ++j) out[j] = bf16_to_f32(p[j]);
      return;
    }
    case DType::kF32: {
      const float* p = static_cast<const float*>(data) + i;
      for (int64_t j = 0; j < n; ++j) out[j] = p[j];
      return;
    }
    default:
      for (int64_t j = 0; j < n; ++j) out[j] = load(i + j);
  }
}

namespace {

// The bytes of every buffer the store allocates (0 for weights), checked against the host
// memory budget together with the weights' heap bytes.
std::vector<int64_t> buffer_bytes(const Program& p, const Weights& w) {
  std::vector<int64_t> bytes(p.tensors.size(), 0);
  int64_t total = w.heap_bytes();
  size_t largest = 0;
  for (size_t id = 0; id < p.tensors.size(); ++id) {
    const Tensor& t = p.tensors[id];
    if (t.role == TensorRole::kWeight) continue;
    bytes[id] = std::max<int64_t>(t.num_bytes(), size_of(t.dtype));  // at least one element
    total = checked_add(total, bytes[id], "the CPU run's tensor bytes");
    if (bytes[id] > bytes[largest]) largest = id;
  }
  if (!p.tensors.empty() && bytes[largest] > 0) {
    const Tensor& t = p.tensors[largest];
    check_host_memory(total, "the CPU run's tensors (the largest: '" + t.name + "', " +
                                 std::string(name_of(t.dtype)) + " " + format_shape(t.shape) + ", " +
                                 format_mib(bytes[largest]) + ") and heap weights (" +
                                 format_mib(w.heap_bytes()) + ")");
  }
  return bytes;
}

}  // namespace

TensorStore::TensorStore(const Program& p, const Weights& w) {
  const std::vector<int64_t> bytes = buffer_bytes(p, w);
  bufs_.resize(p.tensors.size());
  for (size_t id = 0; id < p.tensors.size(); ++id) {
    const Tensor& t = p.tensors[id];
    names_.push_back(t.name);
    TensorBuffer& b = bufs_[id];
    b.shape = t.shape;
    b.numel = t.num_elements();
    b.strides.assign(t.shape.size(), 1);
    for (int d = static_cast<int>(t.shape.size()) - 2; d >= 0; --d)
      b.strides[d] = b.strides[d + 1] * t.shape[d + 1];
    if (t.role == TensorRole::kWeight) {
      const WeightTensor* wt = w.find(t.name);
      if (!wt) throw Error("weights " + w.source() + ": missing tensor '" + t.name + "'");
      if (wt->shape != t.shape)
        throw Error("weights " + w.source() + ": tensor '" + t.name + "' has the wrong shape");
      if (wt->dtype == DType::kI32)
        throw Error("weights " + w.source() + ": tensor '" + t.name + "' is not floating point");
      b.dtype = wt->dtype;
      b.data = const_cast<void*>(wt->data);
      b.read_only = true;
      continue;
    }
    b.dtype = t.dtype;
    owned_.push_back(std::make_unique<uint64_t[]>(static_cast<size_t>((bytes[id] + 7) / 8)));  // zeroed
    b.data = owned_.back().get();
  }
}

void TensorStore::require_writable(TensorId id, const std::string& writer) const {
  if (bufs_.at(id).read_only)
    throw Error(writer + " writes tensor '" + names_.at(id) +
                "', which is read-only (a weight: its memory is the checkpoint's or the weights')");
}

}  // namespace mpk
