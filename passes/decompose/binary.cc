// decompose, binary elementwise family (silu_mul, residual_add, all_reduce): one task per
// column tile.
#include "ir/ops/binary.h"
#include "passes/decompose/decomposer.h"

namespace mpk::decompose {

void decompose_binary(Decomposer& d, const Operator& op) {
  const bool silu = op.kind == OpKind::kSiluMul;
  const int64_t flops_per_element = silu ? 4 : 1;
  const TensorId a = op.inputs[0], c = op.inputs[1], y = op.outputs[0];
  const int64_t b = d.shape(y)[0], cols = d.shape(y)[1];
  Decomposer::tiles(cols, d.elementwise_tile(cols), [&](int64_t c0, int64_t c1) {
    d.task(binary_task_kind(op.kind), {d.reg(a, {{0, b}, {c0, c1}}), d.reg(c, {{0, b}, {c0, c1}})},
           {d.reg(y, {{0, b}, {c0, c1}})}, flops_per_element * b * (c1 - c0));
  });
}

}  // namespace mpk::decompose
