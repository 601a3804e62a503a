// TensorStore: buffer allocation and weight binding.
#include "runtime/cpu/tensor_store.h"

#include <algorithm>

#include "ir/error.h"

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

TensorStore::TensorStore(const Program& p, const Weights& w) {
  bufs_.resize(p.tensors.size());
  for (size_t id = 0; id < p.tensors.size(); ++id) {
    const Tensor& t = p.tensors[id];
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
    const int64_t words = (std::max<int64_t>(b.numel, 1) * size_of(t.dtype) + 7) / 8;
    owned_.push_back(std::make_unique<uint64_t[]>(words));  // zeroed
    b.data = owned_.back().get();
  }
}

}  // namespace mpk
