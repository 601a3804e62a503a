// prefill-chunk{rows=C}: rewrites a decode program (before decompose) into a prefill chunk
// (docs/ir.md "Prefill chunks"): every activation and the tokens get C rows per sequence,
// the KV caches keep theirs, and what follows the last layer (the final norm, the LM head,
// the argmax, and the tensors only they use) goes, since a chunk only fills the caches.
// The module gets attr chunk = C. It may run before or after the fusions: every operator
// of a layer works row by row, except attention and kv_append, which take the row's own
// position.
#include "ir/attrs.h"
#include "ir/import/limits.h"
#include "ir/row_positions.h"
#include "passes/fuse_common.h"
#include "passes/options.h"

namespace mpk {
namespace {

struct PrefillChunkOptions {
  int64_t rows = 16;
};

Error chunk_error(const std::string& what) { return Error("prefill-chunk: " + what); }

void make_chunk(Module& m, int64_t rows) {
  if (!m.graph.empty()) throw chunk_error("the module is decomposed; prefill-chunk runs before decompose");
  if (is_prefill_chunk(m)) throw chunk_error("the module is a prefill chunk already (attr chunk)");
  Program& p = m.program;
  p.rebuild_use_lists();
  // The embedding and the layers stay; every other operator (layer -1) follows the layers.
  std::vector<bool> dead_op(p.ops.size(), false), dead_tensor(p.tensors.size(), false);
  bool embedding = false;
  for (size_t o = 0; o < p.ops.size(); ++o) {
    const Operator& op = p.ops[o];
    if (op.kind == OpKind::kEmbedding) embedding = true;
    else if (op.layer < 0) dead_op[o] = true;
  }
  if (!embedding) throw chunk_error("the program has no embedding");
  for (size_t t = 0; t < p.tensors.size(); ++t) {
    bool used = false;
    for (OpId o : p.readers[t]) used |= !dead_op[o];
    for (OpId o : p.writers[t]) used |= !dead_op[o];
    dead_tensor[t] = !used;
  }
  compact(p, dead_op, dead_tensor);
  for (Tensor& t : p.tensors)
    if (t.role != TensorRole::kWeight && t.role != TensorRole::kKvCache && !t.shape.empty())
      t.shape[0] *= rows;
  m.attrs["chunk"] = rows;
}

class PrefillChunkPass : public Pass {
 public:
  explicit PrefillChunkPass(const PrefillChunkOptions& o) : rows_(o.rows) {}
  PassResult run(Module& m) override {
    try {
      make_chunk(m, rows_);
    } catch (const Error& e) {
      return PassResult::failure(e.what());
    }
    return PassResult::ok(true);
  }

 private:
  int64_t rows_;
};

PassInfo prefill_chunk_pass_info() {
  using O = PrefillChunkOptions;
  return typed_pass_info(
      "prefill-chunk",
      "turn the decode program into a prefill chunk of `rows` prompt positions per step (the layers only: "
      "it fills the KV caches); before decompose",
      OptionSchema<O>().integer("rows", &O::rows, "prompt positions per step", 1, kMaxChunkRows),
      [](const O& o) { return std::make_unique<PrefillChunkPass>(o); });
}

}  // namespace

MPK_PASS(prefill_chunk_pass_info);

}  // namespace mpk
