// The linear family's forms (linear and lm_head operators, linear and lm_head tasks):
// the operands of each form by role, a cooperative share's attrs, and the regions a
// task of a given output tile reads, which decompose makes, the verifier expects and
// the CPU executor checks (one statement of docs/ir.md's linear rows).
#pragma once

#include <cstddef>
#include <vector>

#include "ir/module.h"

namespace mpk {

// The operands of a linear or lm_head operator by role (docs/ir.md, "Operators"):
//   linear(x, W) -> (y), lm_head(x, W) -> (logits)
//   with a bias (Qwen2's q/k/v):       linear(x, W, bias){bias=1} -> (y), before any
//                                      residual or norm weight below
//   with a residual (fuse-residual):   linear(x, W, residual) -> (y)
//   with a norm (fuse-norm):           linear(x, W, norm_w){eps}, lm_head(x, W, norm_w){eps}
//   swiglu (fuse-swiglu):              linear(x, Wg, Wu[, norm_w]){activation="swiglu"[, eps]} -> (act)
//   with argmax (fuse-argmax):         lm_head(...) -> (logits, tokens)
// Tensor ids, -1 where absent (and for every other operator kind). The form is read
// from the arity and the attrs `activation`, `bias` and `eps`; the verifier checks the rest.
struct LinearForm {
  TensorId x = -1;
  TensorId weight = -1;    // inputs[1]: W, or the gate weight Wg of a swiglu
  TensorId up = -1;        // swiglu: inputs[2], the up weight Wu
  TensorId bias = -1;      // with attr bias: inputs[2], added to the product before it is rounded
  TensorId norm = -1;      // with attr eps: the input after these; its eps is attr `eps`
  TensorId residual = -1;  // without attr eps: the input after these (not of a swiglu)
  TensorId y = -1;         // outputs[0]: y, act or logits
  TensorId tokens = -1;    // lm_head with argmax: outputs[1]
  bool swiglu() const { return up >= 0; }
  // Its output is its product exactly, rounded (after the norm prologue, if any): no
  // epilogue. What fuse-swiglu may take as a gate or an up half.
  bool product_only() const { return residual < 0 && up < 0 && bias < 0; }
  // The number of inputs this form has.
  size_t num_inputs() const { return 2 + (up >= 0) + (bias >= 0) + (norm >= 0 || residual >= 0); }
};
LinearForm linear_form(const Operator& op);

// A linear's optional third input, as LinearForm tells it: the residual or the norm
// weight (for a linear that is not a swiglu, inputs[2]; a swiglu's norm is inputs[3]).
enum class LinearExtra { kNone, kResidual, kNorm };
LinearExtra linear_extra(const Operator& op);

// A cooperative share (docs/ir.md, "Cooperative linears"): one of the `shares` tasks of a
// linear or lm_head operator that together compute its output, cut into units of
// `unit_rows` output rows (the last one shorter); which share computes a unit is
// decided at run time. From the task attrs `share`, `shares`, `unit_rows` (integers;
// the verifier checks them); shares == 0 for an ordinary task.
struct CoopShare {
  int64_t share = 0, shares = 0, unit_rows = 0;
  bool cooperative() const { return shares > 0; }
  int64_t units(int64_t rows) const { return (rows + unit_rows - 1) / unit_rows; }
};
CoopShare coop_share(const Task& t);

// What a linear or lm_head task of output rows n (all batch rows) reads (docs/ir.md,
// "Tasks"): x whole, the weight rows n (and the up weight's), the residual's columns n,
// the norm weight whole, the bias rows n. `f` is the form of an operator of `p`.
std::vector<Region> linear_task_reads(const Program& p, const LinearForm& f, Range n);

}  // namespace mpk
