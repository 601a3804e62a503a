// decompose, norm family: one rms_norm task per operator (whole rows: each task sums
// its rows' squares); one qk_norm task over all heads.
#include "passes/decompose/decomposer.h"

namespace mpk::decompose {

void decompose_norm(Decomposer& d, const Operator& op) {
  const TensorId x = op.inputs[0], w = op.inputs[1], y = op.outputs[0];
  const int64_t b = d.shape(x)[0], width = d.shape(x)[1];
  const TaskKind kind = op.kind == OpKind::kRmsNorm ? TaskKind::kRmsNorm : TaskKind::kQkNorm;
  d.task(kind, {d.reg(x, {{0, b}, {0, width}}), d.reg(w, {{0, d.shape(w)[0]}})}, {d.reg(y, {{0, b}, {0, width}})},
         4 * b * width);
}

}  // namespace mpk::decompose
