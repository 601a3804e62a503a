// The argmax family in the ir layer: argmax(logits) -> tokens, as argmax_partial tasks
// over vocabulary tiles and one argmax_reduce (which also ends an lm_head fused with
// its argmax).
#include "ir/ops/op_check.h"

namespace mpk::ops {

void argmax_signature(OpSignature& s) {
  s.arity(1, 1);
  const auto& l = s.rank(s.in(0), "logits", 2);
  const auto& t = s.rank(s.out(0), "tokens", 1);
  s.floating(s.in(0), "logits");
  s.dtype(s.out(0), "tokens", DType::kI32);
  s.dim(t[0], l[0], "tokens length (batch)");
  if (s.op().attrs.count("parallel") && attr_str(s.op().attrs, "parallel") != "column")
    s.bad("attribute 'parallel' of an argmax must be \"column\" (its logits split by vocabulary)");
}

bool argmax_owns_task(const Operator&, TaskKind k) {
  return k == TaskKind::kArgmaxPartial || k == TaskKind::kArgmaxReduce;
}

// A partial: the logits columns it reads -> its slot p of both partial tensors. The
// reduce: both partial tensors whole -> the tokens.
TaskRegions argmax_task_regions(const TaskRegionRules& r, const Task& task) {
  const Operator& op = r.op_of(task);
  const OpScratch& sc = r.scratch();
  const TensorId val = r.need(sc.val, "argmax partial");
  if (task.kind == TaskKind::kArgmaxReduce) {
    const TensorId tokens = op.kind == OpKind::kArgmax ? op.outputs[0] : linear_form(op).tokens;
    return {{r.whole(val), r.whole(sc.idx)}, {r.whole(tokens)}};
  }
  const TensorId logits = op.inputs[0];
  const int64_t p = r.key(task, val, "argmax partial").dims[1].lo;
  const Region* read = nullptr;
  for (const Region& x : task.reads)
    if (x.tensor == logits && !read) read = &x;
  if (!read) r.bad("reads no region of its logits '" + r.program().tensors[logits].name + "'");
  return {{r.reg(logits, {r.all(logits), read->dims[1]})},
          {r.reg(val, {r.all(val), {p, p + 1}}), r.reg(sc.idx, {r.all(sc.idx), {p, p + 1}})}};
}

}  // namespace mpk::ops
