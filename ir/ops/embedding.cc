// The embedding family in the ir layer: embedding(table, tokens) -> y, one task per
// column tile.
#include "ir/ops/op_check.h"

namespace mpk::ops {

void embedding_signature(OpSignature& s) {
  s.arity(2, 1);
  const auto& table = s.rank(s.in(0), "table", 2);
  const auto& tok = s.rank(s.in(1), "tokens", 1);
  const auto& y = s.rank(s.out(0), "y", 2);
  s.floating(s.in(0), "table");
  s.dtype(s.in(1), "tokens", DType::kI32);
  s.floating(s.out(0), "y");
  s.dim(y[0], tok[0], "y dimension 0 (batch)");
  s.dim(y[1], table[1], "y dimension 1 (hidden)");
}

bool embedding_owns_task(const Operator&, TaskKind k) { return k == TaskKind::kEmbedding; }

// Columns c: table[0:V, c], tokens whole -> y[0:B, c].
TaskRegions embedding_task_regions(const TaskRegionRules& r, const Task& task) {
  const Operator& op = r.op_of(task);
  const TensorId table = op.inputs[0], tokens = op.inputs[1], y = op.outputs[0];
  const Range c = r.key(task, y, "output").dims[1];
  return {{r.reg(table, {r.all(table), c}), r.whole(tokens)}, {r.reg(y, {r.all(y), c})}};
}

}  // namespace mpk::ops
