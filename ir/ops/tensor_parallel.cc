// Tensor parallel facts of the IR; see ir/ops/tensor_parallel.h.
#include "ir/ops/tensor_parallel.h"

#include <algorithm>
#include <variant>

namespace mpk {

int64_t tp_ranks(const Module& m) {
  const auto it = m.attrs.find("tp");
  if (it == m.attrs.end()) return 1;
  const auto* v = std::get_if<int64_t>(&it->second);
  return v ? *v : 1;
}

namespace {

std::string parallel_of(const Operator& op) {
  const auto it = op.attrs.find("parallel");
  const auto* how = it == op.attrs.end() ? nullptr : std::get_if<std::string>(&it->second);
  return how ? *how : "";
}

}  // namespace

int split_dim_in(const Operator& op, TensorId t) {
  if (op.kind != OpKind::kLinear && op.kind != OpKind::kLmHead) return -1;
  const std::string how = parallel_of(op);
  const LinearForm f = linear_form(op);
  const bool weight = t == f.weight || t == f.up;
  if (how == "column") return weight || t == f.bias ? 0 : -1;
  if (how == "row") return weight ? 1 : -1;
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

bool vocab_parallel(const Operator& op) {
  const bool with_argmax = op.kind == OpKind::kArgmax || (op.kind == OpKind::kLmHead && op.outputs.size() == 2);
  return with_argmax && parallel_of(op) == "column";
}

int64_t vocab_per_rank(const Module& m) {
  const int64_t vocab = attr_int(m.attrs, "vocab");
  for (const Operator& op : m.program.ops)
    if (op.kind == OpKind::kLmHead && parallel_of(op) == "column") return vocab / tp_ranks(m);
  return vocab;
}

bool vocab_split(const Module& m) { return vocab_per_rank(m) != attr_int(m.attrs, "vocab"); }

bool reads_every_rank(const Operator& op, TensorId t) {
  if (op.kind == OpKind::kAllReduce) return op.inputs.size() == 2 && op.inputs[1] == t;
  if (!vocab_parallel(op)) return false;
  auto in = [&](const std::vector<TensorId>& v) { return std::find(v.begin(), v.end(), t) != v.end(); };
  return !in(op.inputs) && !in(op.outputs);
}

std::vector<bool> symmetric_tensors(const Module& m) {
  const Program& p = m.program;
  std::vector<bool> out(p.tensors.size(), false);
  auto mark = [&](const Operator& op, TensorId t) {
    if (t >= 0 && static_cast<size_t>(t) < out.size() && reads_every_rank(op, t)) out[t] = true;
  };
  for (const Operator& op : p.ops)
    for (TensorId t : op.inputs) mark(op, t);
  for (const Task& task : m.graph.tasks)
    if (task.op >= 0 && static_cast<size_t>(task.op) < p.ops.size())
      for (const Region& r : task.reads) mark(p.ops[task.op], r.tensor);
  return out;
}

}  // namespace mpk
