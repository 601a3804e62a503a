// decompose, argmax family: argmax_partial tasks over vocabulary tiles into the argmax
// partial tensors, then one argmax_reduce (also after the tasks of an lm_head fused with
// its argmax).
#include "passes/decompose/decomposer.h"

namespace mpk::decompose {

ArgmaxScratch Decomposer::argmax_scratch(const Operator& op, int64_t batch, int64_t parts) {
  return {add_scratch(op, "argmax_val", DType::kF32, {batch, parts}),
          add_scratch(op, "argmax_idx", DType::kI32, {batch, parts}), parts};
}

void Decomposer::argmax_reduce(const ArgmaxScratch& am, int64_t batch, TensorId tokens) {
  task(TaskKind::kArgmaxReduce, {reg(am.val, {{0, batch}, {0, am.parts}}), reg(am.idx, {{0, batch}, {0, am.parts}})},
       {reg(tokens, {{0, batch}})}, batch * am.parts);
}

// Auto tile (docs/passes.md): about one tile per SM, a multiple of 64, at least 64.
void decompose_argmax(Decomposer& d, const Operator& op) {
  const TensorId logits = op.inputs[0], tokens = op.outputs[0];
  const int64_t b = d.shape(logits)[0], v = d.shape(logits)[1];
  const int64_t tile = d.options().argmax_tile.value_or(std::max<int64_t>(64, round_up(ceil_div(v, d.sms()), 64)));
  const ArgmaxScratch am = d.argmax_scratch(op, b, ceil_div(v, tile));
  int64_t p = 0;
  Decomposer::tiles(v, tile, [&](int64_t v0, int64_t v1) {
    d.task(TaskKind::kArgmaxPartial, {d.reg(logits, {{0, b}, {v0, v1}})},
           {d.reg(am.val, {{0, b}, {p, p + 1}}), d.reg(am.idx, {{0, b}, {p, p + 1}})}, b * (v1 - v0));
    ++p;
  });
  d.argmax_reduce(am, b, tokens);
}

}  // namespace mpk::decompose
