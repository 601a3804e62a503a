// The binary elementwise family in the ir layer: silu_mul, residual_add and all_reduce
// over [B, C] operands of one shape, one task per column tile. An all_reduce task reads
// its second operand's columns on every rank (docs/ir.md "Tensor parallel"); its regions
// name this rank's copy, as the tensor is the same on every rank.
#include "ir/ops/binary.h"
#include "ir/ops/op_check.h"

namespace mpk::ops {

void binary_signature(OpSignature& s) {
  s.arity(2, 1);
  s.rank(s.in(0), "a", 2);
  s.floating(s.in(0), "a");
  s.floating(s.in(1), "b");
  s.floating(s.out(0), "y");
  s.same_shape(s.in(1), "b", s.in(0), "a");
  s.same_shape(s.out(0), "y", s.in(0), "a");
}

bool binary_owns_task(const Operator& op, TaskKind k) { return k == binary_task_kind(op.kind); }

// Columns c of both inputs -> columns c of y.
TaskRegions binary_task_regions(const TaskRegionRules& r, const Task& task) {
  const Operator& op = r.op_of(task);
  const TensorId a = op.inputs[0], b = op.inputs[1], y = op.outputs[0];
  const Range c = r.key(task, y, "output").dims[1];
  return {{r.reg(a, {r.all(a), c}), r.reg(b, {r.all(b), c})}, {r.reg(y, {r.all(y), c})}};
}

}  // namespace mpk::ops
