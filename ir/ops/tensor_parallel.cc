// Tensor parallel facts of the IR; see ir/ops/tensor_parallel.h.
#include "ir/ops/tensor_parallel.h"

#include <variant>

namespace mpk {

int64_t tp_ranks(const Module& m) {
  const auto it = m.attrs.find("tp");
  if (it == m.attrs.end()) return 1;
  const auto* v = std::get_if<int64_t>(&it->second);
  return v ? *v : 1;
}

int split_dim_in(const Operator& op, TensorId t) {
  if (op.kind != OpKind::kLinear) return -1;
  const auto it = op.attrs.find("parallel");
  if (it == op.attrs.end()) return -1;
  const auto* how = std::get_if<std::string>(&it->second);
  if (!how) return -1;
  const LinearForm f = linear_form(op);
  const bool weight = t == f.weight || t == f.up;
  if (*how == "column") return weight || t == f.bias ? 0 : -1;
  if (*how == "row") return weight ? 1 : -1;
  return -1;
}

int tp_split_dim(const Program& p, TensorId t) {
  for (const Operator& op : p.ops) {
    const int d = split_dim_in(op, t);
    if (d >= 0) return d;
  }
  return -1;
}

Module with_whole_weights(const Module& m) {
  Module whole = m;
  for (size_t t = 0; t < whole.program.tensors.size(); ++t) {
    const int dim = tp_split_dim(m.program, static_cast<TensorId>(t));
    if (dim >= 0) whole.program.tensors[t].shape[dim] *= tp_ranks(m);
  }
  return whole;
}

bool reads_every_rank(const Operator& op, TensorId t) {
  return op.kind == OpKind::kAllReduce && op.inputs.size() == 2 && op.inputs[1] == t;
}

std::vector<bool> symmetric_tensors(const Program& p) {
  std::vector<bool> out(p.tensors.size(), false);
  for (const Operator& op : p.ops)
    for (TensorId t : op.inputs)
      if (t >= 0 && static_cast<size_t>(t) < out.size() && reads_every_rank(op, t)) out[t] = true;
  return out;
}

}  // namespace mpk
