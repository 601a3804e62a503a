// decompose, embedding family: one task per column tile of the hidden size.
#include "passes/decompose/decomposer.h"

namespace mpk::decompose {

void decompose_embedding(Decomposer& d, const Operator& op) {
  const TensorId table = op.inputs[0], tok = op.inputs[1], y = op.outputs[0];
  const int64_t v = d.shape(table)[0], h = d.shape(table)[1], b = d.shape(tok)[0];
  // Traffic: the B table rows actually gathered, not the whole [0:V] read region.
  Decomposer::tiles(h, d.elementwise_tile(h), [&](int64_t c0, int64_t c1) {
    const int64_t bytes = b * (c1 - c0) * (d.esize(table) + d.esize(y)) + b * d.esize(tok);
    d.task(TaskKind::kEmbedding, {d.reg(table, {{0, v}, {c0, c1}}), d.reg(tok, {{0, b}})},
           {d.reg(y, {{0, b}, {c0, c1}})}, 0, bytes);
  });
}

}  // namespace mpk::decompose
