// A deliberately naive double-precision implementation of every operator and partial
// task of docs/ir.md, written from that page alone, to check the CPU reference
// (runtime/cpu/) against the normative semantics rather than against itself. It shares
// no code with runtime/cpu/ or ir/rope.h: the storage formats are decoded and rounded
// from their definitions, RoPE frequencies come from the formula in docs/ir.md, sums run
// in double in index order. As the IR prescribes, every store rounds to the destination
// dtype (nearest, ties to even), so the only differences left against the CPU's f32
// arithmetic are its rounding errors and the bf16 roundings they can flip.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/module.h"
#include "runtime/weights/weights.h"

namespace mpk::naive {

// The value of a bfloat16 / IEEE binary16 bit pattern (exact in double).
double bf16_value(uint16_t bits);
double f16_value(uint16_t bits);
// The bit pattern of a value that bf16 represents exactly; throws std::logic_error otherwise.
uint16_t bf16_bits(double value);

// `x` rounded to nearest, ties to even, to what `dt` stores: 8 significant bits for
// bf16, 11 for f16, 24 for f32 (with their subnormals and overflow to infinity); i32 keeps x.
double round_to(DType dt, double x);

// A tensor as the exact values its dtype holds, row-major.
struct Tensor64 {
  DType dtype = DType::kBF16;
  std::vector<int64_t> shape;
  std::vector<double> v;

  void store(int64_t i, double x) { v[i] = round_to(dtype, x); }
};

// docs/ir.md, "RoPE": inv[i] = theta^(-2i/hd), with the llama3 rescaling when
// rope_type = "llama3"; and one head of `hd` values rotated in place at `pos`
// (element i pairs with i + hd/2).
std::vector<double> rope_inverse_frequencies(const Attrs& rope_attrs);
void rope_head(double* head, int64_t hd, const std::vector<double>& inv, int64_t pos);

// x * rsqrt(mean(x^2) + eps) * w over one row of n values.
std::vector<double> rms_norm_row(const double* x, const double* w, int64_t n, double eps);

// A q or k head as a fused attention (or a kv_append with rope) uses it, before its
// final rounding: qk-normed with `norm_w` and rounded to bf16 when `norm_w` is given,
// then roped at `pos` when `inv` is given.
std::vector<double> prepare_head(std::vector<double> head, const double* norm_w, double eps,
                                 const std::vector<double>* inv, int64_t pos);

// docs/ir.md, "An attention partial": one query head `q` against kv head `h` of batch
// row `b` over positions [t0, t1) ∩ [0, pos]: the normalized output o, the max score m
// and l = sum exp(score - m); (0, -inf, 0) when the range is empty.
struct AttentionPartial {
  std::vector<double> o;
  double m = 0, l = 0;
};
AttentionPartial attend(const std::vector<double>& q, const Tensor64& k_cache, const Tensor64& v_cache,
                        int64_t b, int64_t h, int64_t t0, int64_t t1, int64_t pos, double scale);
// The merge: M = max m_s, w_s = l_s exp(m_s - M), y = sum w_s o_s / sum w_s.
std::vector<double> merge(const std::vector<AttentionPartial>& parts);

// The largest value over row[v0, v1) and its lowest index; NaN never wins and a range
// with no value above -inf gives (-inf, v0). reduce picks the largest value of the
// partials, the lowest index on ties.
struct ArgmaxPartial {
  double value = 0;
  int64_t index = 0;
};
ArgmaxPartial argmax_range(const double* row, int64_t v0, int64_t v1);
ArgmaxPartial argmax_reduce(const std::vector<ArgmaxPartial>& parts);

// Whole operators of a Program on Tensor64s: weights decoded from their storage dtype
// (never rounded to the IR dtype: the CPU reads them as stored), the rest zero.
class Interpreter {
 public:
  Interpreter(const Program& p, const Weights& w);
  Tensor64& at(TensorId id) { return tensors_.at(id); }
  // Runs operator `id` at decode step `step` (pos = step; docs/ir.md, "Module"); the
  // prompt holds `prompt_rows` rows of equal length: 1 (every batch row's) or one per row.
  void run_op(OpId id, int64_t step, const std::vector<int64_t>& prompt, int64_t prompt_rows = 1);

 private:
  void linear(const Operator& op);
  void attention(const Operator& op, int64_t pos);

  const Program& p_;
  std::vector<Tensor64> tensors_;
};

// `steps` decode steps of `m`'s Program: every step's tokens, largest logits per batch
// row and logits.
struct ModelRun {
  std::vector<std::vector<int64_t>> tokens;      // [step][row]
  std::vector<std::vector<double>> top_logits;   // [step][row]
  std::vector<std::vector<double>> step_logits;  // [step][B * V]
  std::vector<double> logits;                    // [B, V] of the last step
};
ModelRun run_model(const Module& m, const Weights& w, int64_t steps, const std::vector<int64_t>& prompt,
                   int64_t prompt_rows = 1);

}  // namespace mpk::naive
