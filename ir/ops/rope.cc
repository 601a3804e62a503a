// The rope family in the ir layer: rotate-half RoPE at the step's position over whole
// heads (its attrs, OpSignature::rope_attrs, also describe the RoPE of a kv_append or
// fused attention).
#include "ir/ops/op_check.h"

namespace mpk::ops {

void rope_signature(OpSignature& s) {
  s.arity(1, 1);
  const auto& x = s.rank(s.in(0), "x", 2);
  s.floating(s.in(0), "x");
  s.floating(s.out(0), "y");
  s.same_shape(s.out(0), "y", s.in(0), "x");
  const int64_t hd = s.rope_attrs();
  if (x[1] % hd != 0)
    s.bad("x width " + std::to_string(x[1]) + " is not a multiple of head_dim " + std::to_string(hd));
}

bool rope_owns_task(const Operator&, TaskKind k) { return k == TaskKind::kRope; }

// x and y columns of whole heads.
TaskRegions rope_task_regions(const TaskRegionRules& r, const Task& task) {
  const Operator& op = r.op_of(task);
  const TensorId x = op.inputs[0], y = op.outputs[0];
  const int64_t hd = attr_int(op.attrs, "head_dim");
  const Region& wr = r.key(task, y, "output");
  const Range c = wr.dims[1];
  if (c.lo % hd != 0 || c.hi % hd != 0)
    r.bad("writes " + format_region(r.program().tensors[y].name, wr) + ": not whole heads of " + std::to_string(hd));
  return {{r.reg(x, {r.all(x), c})}, {r.reg(y, {r.all(y), c})}};
}

}  // namespace mpk::ops
