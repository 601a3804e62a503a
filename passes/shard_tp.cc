// shard-tp{ranks=N}: rewrites an imported program (before the fusions and decompose) into
// the program that each of N tensor-parallel ranks runs (docs/ir.md "Tensor parallel",
// docs/passes.md), Megatron's split of a decoder layer:
//   - a linear whose output only a residual_add reads (o_proj, down_proj) is row
//     parallel: each rank multiplies its slice of the K columns (the weight's columns
//     rank*K/N..), and the residual_add becomes all_reduce(h, partial), which adds every
//     rank's partial product in rank order;
//   - every other linear (q, k, v, gate, up) is column parallel: each rank computes its
//     slice of the outputs (the weight's rows, and the bias);
//   - what lies between them works per head or per feature on the rank's slice: q/k
//     norm, RoPE, the KV append (and the caches of the rank's KV heads), attention over
//     the rank's heads, silu_mul.
//   - the LM head is split by its vocabulary rows (parallel="column", each rank writes its
//     slice of the logits) and the argmax finds the largest logit over every rank's
//     slice (parallel="column"), unless its weight is the embedding table (tied
//     embeddings), which the embedding reads whole: then both stay whole.
// Embedding and norms stay whole on every rank. The module gets attr tp = N; its other
// attrs keep the whole model's sizes. ranks=1 makes the same structure for one rank (what
// tests run on one GPU).
#include <algorithm>

#include "ir/attrs.h"
#include "ir/ops/tensor_parallel.h"
#include "passes/options.h"

namespace mpk {
namespace {

struct ShardTpOptions {
  int64_t ranks = 2;
};

class ShardTp {
 public:
  ShardTp(Module& m, int64_t ranks) : m_(m), p_(m.program), n_(ranks) {}

  void run() {
    if (!m_.graph.tasks.empty()) fail("the module is decomposed; shard-tp runs before decompose");
    if (m_.attrs.count("tp")) fail("the module is sharded already (attr tp)");
    p_.rebuild_use_lists();
    std::vector<OpId> rows, columns;
    for (OpId o = 0; o < static_cast<OpId>(p_.ops.size()); ++o) {
      const Operator& op = p_.ops[o];
      if (op.kind != OpKind::kLinear) continue;
      const LinearForm f = linear_form(op);
      if (f.residual >= 0 || f.norm >= 0 || f.swiglu())
        fail("operator '" + op.name + "' is fused; shard-tp runs before the fusions");
      (feeds_residual(op) ? rows : columns).push_back(o);
    }
    split_heads();
    for (OpId o : columns) column(o);
    for (OpId o : rows) row(o);
    for (Operator& op : p_.ops)
      if (op.kind == OpKind::kLmHead) vocabulary(op);
    propagate();
    m_.attrs["tp"] = n_;
    p_.rebuild_use_lists();
  }

 private:
  [[noreturn]] void fail(const std::string& what) const { throw Error("shard-tp: " + what); }

  int64_t divided(int64_t v, const std::string& what) const {
    if (v % n_ != 0)
      fail(what + " is " + std::to_string(v) + ", which " + std::to_string(n_) + " ranks cannot split evenly");
    return v / n_;
  }

  // Its only reader is a residual_add.
  bool feeds_residual(const Operator& op) const {
    const auto& readers = p_.readers[op.outputs[0]];
    return readers.size() == 1 && p_.ops[readers[0]].kind == OpKind::kResidualAdd;
  }

  void split_heads() {
    for (const char* key : {"num_q_heads", "num_kv_heads"})
      if (m_.attrs.count(key)) divided(attr_int(m_.attrs, key), std::string("the model's ") + key);
    for (Operator& op : p_.ops)
      if (op.kind == OpKind::kAttention)
        for (const char* key : {"num_q_heads", "num_kv_heads"})
          op.attrs[key] = divided(attr_int(op.attrs, key), "operator '" + op.name + "' attr " + key);
  }

  void column(OpId o) {
    Operator& op = p_.ops[o];
    const LinearForm f = linear_form(op);
    Tensor& w = p_.tensors[f.weight];
    w.shape[0] = divided(w.shape[0], "the rows of weight '" + w.name + "'");
    if (f.bias >= 0) p_.tensors[f.bias].shape[0] /= n_;
    op.attrs["parallel"] = std::string("column");
    split_last(op.outputs[0]);
  }

  void row(OpId o) {
    Operator& op = p_.ops[o];
    const LinearForm f = linear_form(op);
    if (f.bias >= 0) fail("operator '" + op.name + "' is row parallel and has a bias, which would be added once per rank");
    Tensor& w = p_.tensors[f.weight];
    w.shape[1] = divided(w.shape[1], "the columns of weight '" + w.name + "'");
    op.attrs["parallel"] = std::string("row");
    Operator& add = p_.ops[p_.readers[op.outputs[0]][0]];
    add.kind = OpKind::kAllReduce;
    if (add.inputs[0] == op.outputs[0]) std::swap(add.inputs[0], add.inputs[1]);
  }

  void vocabulary(Operator& head) {
    const LinearForm f = linear_form(head);
    if (f.norm >= 0 || head.outputs.size() != 1)
      fail("operator '" + head.name + "' is fused; shard-tp runs before the fusions");
    if (p_.readers[f.weight].size() != 1) return;  // tied embeddings: the table stays whole
    Tensor& w = p_.tensors[f.weight];
    w.shape[0] = divided(w.shape[0], "the vocabulary rows of '" + w.name + "'");
    head.attrs["parallel"] = std::string("column");
    split_last(head.outputs[0]);
  }

  // The last dimension of an activation that each rank now holds a slice of.
  void split_last(TensorId t) {
    if (split_[t]) return;
    Tensor& x = p_.tensors[t];
    x.shape.back() = divided(x.shape.back(), "the width of '" + x.name + "'");
    split_[t] = true;
  }

  // The operators between the column and the row linears follow their inputs' slices, in
  // program order; any other reader of a slice cannot be sharded.
  void propagate() {
    for (Operator& op : p_.ops) {
      const bool reads_slice = std::any_of(op.inputs.begin(), op.inputs.end(), [&](TensorId t) { return split_[t]; });
      if (!reads_slice) continue;
      switch (op.kind) {
        case OpKind::kQkNorm:
        case OpKind::kRope:
        case OpKind::kAttention:
        case OpKind::kSiluMul:
          split_last(op.outputs[0]);
          break;
        case OpKind::kArgmax:  // of the split logits: over every rank's
          op.attrs["parallel"] = std::string("column");
          break;
        case OpKind::kKvAppend:
          for (TensorId cache : op.outputs) {
            Tensor& c = p_.tensors[cache];
            if (!split_[cache]) c.shape[2] = divided(c.shape[2], "the KV heads of '" + c.name + "'");
            split_[cache] = true;
          }
          break;
        case OpKind::kLinear:
          if (attr_str_or(op.attrs, "parallel", "") == "row") break;
          [[fallthrough]];
        default:
          fail("operator '" + op.name + "' (" + std::string(name_of(op.kind)) +
               ") reads a tensor that the ranks hold slices of; shard-tp cannot split it");
      }
    }
  }

  Module& m_;
  Program& p_;
  int64_t n_;
  std::vector<bool> split_ = std::vector<bool>(p_.tensors.size(), false);
};

class ShardTpPass : public Pass {
 public:
  explicit ShardTpPass(const ShardTpOptions& o) : ranks_(o.ranks) {}
  PassResult run(Module& m) override {
    try {
      ShardTp(m, ranks_).run();
    } catch (const Error& e) {
      return PassResult::failure(e.what());
    }
    return PassResult::ok(true);
  }

 private:
  int64_t ranks_;
};

PassInfo shard_tp_pass_info() {
  using O = ShardTpOptions;
  return typed_pass_info(
      "shard-tp",
      "split the program over tensor-parallel ranks (Megatron: q/k/v and gate/up by output columns, "
      "o_proj and down by input columns with an all_reduce); before the fusions",
      OptionSchema<O>().integer("ranks", &O::ranks, "tensor-parallel ranks (GPUs)", 1, kMaxTpRanks),
      [](const O& o) { return std::make_unique<ShardTpPass>(o); });
}

}  // namespace

MPK_PASS(shard_tp_pass_info);

}  // namespace mpk
