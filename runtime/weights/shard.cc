// shard_weights: one tensor-parallel rank's weights cut from the whole model's; see
// weights.h.
#include <cstring>

#include "ir/checked.h"
#include "ir/error.h"
#include "ir/ops/tensor_parallel.h"
#include "ir/region.h"
#include "runtime/weights/weights.h"

namespace mpk {

Weights shard_weights(const Module& sharded, const Weights& full, int64_t rank) {
  const int64_t ranks = tp_ranks(sharded);
  if (rank < 0 || rank >= ranks)
    throw Error("weights: rank " + std::to_string(rank) + " is not one of the module's " + std::to_string(ranks) +
                " tensor-parallel ranks");
  const Program& p = sharded.program;
  Weights out;
  out.set_source(full.source() + " (tp rank " + std::to_string(rank) + " of " + std::to_string(ranks) + ")");
  for (size_t t = 0; t < p.tensors.size(); ++t) {
    const Tensor& slice = p.tensors[t];
    if (slice.role != TensorRole::kWeight) continue;
    const WeightTensor& whole = full.get(slice.name);
    const int dim = tp_split_dim(p, static_cast<TensorId>(t));
    std::vector<int64_t> expect = slice.shape;
    if (dim >= 0) expect[dim] = checked_mul(expect[dim], ranks, "weights: the shape of " + slice.name);
    if (whole.shape != expect)
      throw Error("weights: tensor '" + slice.name + "' has shape " + format_shape(whole.shape) + ", but " +
                  std::to_string(ranks) + " ranks of " + format_shape(slice.shape) +
                  (dim >= 0 ? " split on dimension " + std::to_string(dim) : std::string(" (whole)")) + " need " +
                  format_shape(expect));
    WeightTensor mine = whole;
    mine.shape = slice.shape;
    const int64_t elem = size_of(whole.dtype);
    // Bytes of one index of `dim` and everything after it, and how many such blocks.
    int64_t inner = elem, outer = 1;
    for (size_t d = dim < 0 ? 0 : dim + 1; d < slice.shape.size(); ++d) inner *= slice.shape[d];
    for (int d = 0; d < dim; ++d) outer *= slice.shape[d];
    const int64_t part = dim < 0 ? 0 : slice.shape[dim] * inner;  // one rank's block
    if (dim <= 0) {  // whole, or a contiguous block of rows: the rank's part of `full`
      mine.data = static_cast<const char*>(whole.data) + rank * part;
      out.add(slice.name, std::move(mine), nullptr);
      continue;
    }
    std::shared_ptr<char[]> buf(new char[static_cast<size_t>(outer * part)]);
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(buf.get() + o * part, static_cast<const char*>(whole.data) + (o * ranks + rank) * part,
                  static_cast<size_t>(part));
    mine.data = buf.get();
    out.add(slice.name, std::move(mine), buf, true);
  }
  return out;
}

}  // namespace mpk
