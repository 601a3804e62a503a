// decompose, rope family: one task over all heads.
#include "passes/decompose/decomposer.h"

namespace mpk::decompose {

void decompose_rope(Decomposer& d, const Operator& op) {
  const TensorId x = op.inputs[0], y = op.outputs[0];
  const int64_t b = d.shape(x)[0], width = d.shape(x)[1];
  // Per element: the angle, its cos and sin, two products and a sum.
  d.task(TaskKind::kRope, {d.reg(x, {{0, b}, {0, width}})}, {d.reg(y, {{0, b}, {0, width}})}, 6 * b * width);
}

}  // namespace mpk::decompose
