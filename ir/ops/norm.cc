// The norm family in the ir layer: rms_norm over whole rows, qk_norm over each head's
// head_dim slice (per-head q/k norms of Qwen3); one rms_norm task per operator, qk_norm
// tasks over whole heads.
#include "ir/ops/op_check.h"

namespace mpk::ops {

void norm_signature(OpSignature& s) {
  s.arity(2, 1);
  const auto& x = s.rank(s.in(0), "x", 2);
  const auto& w = s.rank(s.in(1), "w", 1);
  s.floating(s.in(0), "x");
  s.floating(s.in(1), "w");
  s.floating(s.out(0), "y");
  if (s.op().kind == OpKind::kRmsNorm) s.dim(w[0], x[1], "w length");
  s.same_shape(s.out(0), "y", s.in(0), "x");
  s.positive_float("eps");
  if (s.op().kind == OpKind::kRmsNorm) return;
  const int64_t hd = s.positive_int("head_dim");
  s.dim(w[0], hd, "w length (head_dim)");
  if (x[1] % hd != 0)
    s.bad("x width " + std::to_string(x[1]) + " is not a multiple of head_dim " + std::to_string(hd));
}

bool norm_owns_task(const Operator& op, TaskKind k) {
  return k == (op.kind == OpKind::kRmsNorm ? TaskKind::kRmsNorm : TaskKind::kQkNorm);
}

// rms_norm: everything whole. qk_norm: x and y columns of whole heads, w whole.
TaskRegions norm_task_regions(const TaskRegionRules& r, const Task& task) {
  const Operator& op = r.op_of(task);
  const TensorId x = op.inputs[0], w = op.inputs[1], y = op.outputs[0];
  if (task.kind == TaskKind::kRmsNorm) return {{r.whole(x), r.whole(w)}, {r.whole(y)}};
  const int64_t hd = attr_int(op.attrs, "head_dim");
  const Region& wr = r.key(task, y, "output");
  const Range c = wr.dims[1];
  if (c.lo % hd != 0 || c.hi % hd != 0)
    r.bad("writes " + format_region(r.program().tensors[y].name, wr) + ": not whole heads of " + std::to_string(hd));
  return {{r.reg(x, {r.all(x), c}), r.reg(w, {{0, hd}})}, {r.reg(y, {r.all(y), c})}};
}

}  // namespace mpk::ops
