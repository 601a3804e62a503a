// decompose, kv_append family: one task per kv head (a fused attention's appends are
// made by its own rule, passes/decompose/attention.cc).
#include "passes/decompose/decomposer.h"

namespace mpk::decompose {

void decompose_kv_append(Decomposer& d, const Operator& op) {
  const TensorId k = op.inputs[0], v = op.inputs[1], kc = op.outputs[0], vc = op.outputs[1];
  const auto& cs = d.shape(kc);
  const int64_t rows = d.shape(k)[0], b = cs[0], s = cs[1], nkv = cs[2], hd = cs[3];
  // Traffic: the rows actually copied (one position per row), not the whole [0:S] range.
  for (int64_t h = 0; h < nkv; ++h) {
    const Range cols{h * hd, (h + 1) * hd};
    const int64_t bytes = 2 * rows * hd * (d.esize(k) + d.esize(kc));
    d.task(TaskKind::kKvAppend, {d.reg(k, {{0, rows}, cols}), d.reg(v, {{0, rows}, cols})},
           {d.reg(kc, {{0, b}, {0, s}, {h, h + 1}, {0, hd}}), d.reg(vc, {{0, b}, {0, s}, {h, h + 1}, {0, hd}})}, 0,
           bytes);
  }
}

}  // namespace mpk::decompose
