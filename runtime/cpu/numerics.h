// The arithmetic of the operators on blocks of rows and columns, shared by the
// whole-operator reference (reference.h) and the per-task kernels (task_kernels.h) so
// that both round identically (the linear family's is its own file,
// runtime/cpu/ops/linear.cc). docs/ir.md fixes the semantics; docs/runtime-cpu.md the
// exact f32 evaluation order (which the GPU task bodies mirror):
//   - dot products and sums of squares (linear, lm_head, rms_norm, qk_norm, attention
//     scores) run in the canonical lane order of lane_order.h, the order a GPU warp
//     adds in; every other sum runs in f32 over its index in ascending order from 0;
//   - stores to bf16 / f16 round to nearest even (runtime/cpu/bf16.h);
//   - RoPE angles are f32 products pos * inv[i]; cos / sin are taken in double and
//     rounded to f32; inverse frequencies are computed in double and rounded to f32.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>
#include <vector>

#include "ir/attrs.h"
#include "ir/row_positions.h"
#include "runtime/cpu/tensor_store.h"

namespace mpk {

// The per-step results that the argmax writes: the token and the largest logit of every
// batch row, and when the step finished. Rows are written by whichever task computes them.
class StepRecorder {
 public:
  StepRecorder(int64_t steps, int64_t batch);
  void record(int64_t step, int64_t row, int32_t token, float top_logit);

  int64_t steps() const { return steps_; }
  int64_t batch() const { return batch_; }
  int32_t token(int64_t step, int64_t row) const { return tokens_[step * batch_ + row]; }
  float top_logit(int64_t step, int64_t row) const { return top_[step * batch_ + row]; }
  // Whether every batch row of `step` has been recorded (each row is recorded once).
  bool complete(int64_t step) const {
    return rows_[step].load(std::memory_order_acquire) >= batch_;
  }
  // Seconds from `start` until the last row of `step` was recorded.
  double finished_s(int64_t step, std::chrono::steady_clock::time_point start) const;
  // Marks that batch row `row` of step `step`'s logits holds a NaN or an infinity (the
  // argmax kernels see every logit; any task may call this).
  void mark_non_finite(int64_t step, int64_t row);
  // The first marked (step, row) in step order, or {-1, -1}.
  std::pair<int64_t, int64_t> first_non_finite() const;

 private:
  int64_t steps_, batch_;
  std::vector<int32_t> tokens_;
  std::vector<float> top_;
  std::vector<std::atomic<int64_t>> done_ns_;  // steady_clock ns, max over rows
  std::vector<std::atomic<int64_t>> rows_;     // rows recorded per step
  std::vector<std::atomic<bool>> non_finite_;  // [step * batch + row]
};

// What a kernel needs to know about the running step (docs/ir.md: pos == step).
struct StepContext {
  int64_t step = 0;
  const std::vector<int64_t>* prompt = nullptr;
  StepRecorder* recorder = nullptr;
  int64_t prompt_rows = 1;  // run_common.h, prompt_token
  // Tensor parallel (executor.h, run_cpu_tp): every rank's store, by rank; an all_reduce
  // reads its partial in each. nullptr: one rank, this store.
  const std::vector<const TensorStore*>* rank_stores = nullptr;
  // A prefill chunk's rows per sequence and end (docs/ir.md "Prefill chunks"); 1 and no
  // end for a decode step.
  int64_t chunk = 1;
  int64_t end = std::numeric_limits<int64_t>::max();
  RowPositions rows() const { return {step, chunk, end}; }
};

// Scratch that one thread reuses across calls: buffer `which` (0..4) of at least n floats.
std::vector<float>& thread_scratch(int which, size_t n);
// 1 / sqrt(mean(row^2) + eps), the sum of squares in the canonical lane order.
float rms_scale(const float* row, int64_t h, double eps);
// silu_mul of one element: (g / (1 + exp(-g))) * u.
float silu_mul_value(float g, float u);

// y[b0:b1, c0:c1] = table[tok(b), c0:c1]; throws mpk::Error for a token outside [0, V).
void embedding_block(const TensorBuffer& table, const TensorBuffer& tokens, TensorBuffer& y,
                     int64_t b0, int64_t b1, int64_t c0, int64_t c1, const StepContext& ctx);
// Whole rows b0:b1.
void rms_norm_block(const TensorBuffer& x, const TensorBuffer& w, TensorBuffer& y, int64_t b0,
                    int64_t b1, double eps);
// Whole heads within columns c0:c1.
void qk_norm_block(const TensorBuffer& x, const TensorBuffer& w, TensorBuffer& y, int64_t b0,
                   int64_t b1, int64_t c0, int64_t c1, int64_t head_dim, double eps);

void rope_block(const TensorBuffer& x, TensorBuffer& y, int64_t b0, int64_t b1, int64_t c0,
                int64_t c1, int64_t head_dim, const std::vector<float>& inv, const RowPositions& at);

// What happens to a q or k head before attention uses it, in a kv_append that ropes k
// (fuse-rope) or a fused attention (fuse-attention): with a norm weight, the head is
// qk-normed and rounded to bf16 (as qk_norm stores it); with rope frequencies it is then
// roped at pos (as rope does). Nothing when both are absent.
struct HeadPrep {
  const std::vector<float>* rope_inv = nullptr;
  const TensorBuffer* norm = nullptr;
  double eps = 0;
};

// cache[seq(b), pos(b), h, :] = k[b, h*hd:(h+1)*hd] for kv heads h0:h1 (k and v alike) of
// the rows that store, k first prepared by `prep`, the result rounded to the cache's dtype.
void kv_append_block(const TensorBuffer& k, const TensorBuffer& v, TensorBuffer& kc,
                     TensorBuffer& vc, int64_t b0, int64_t b1, int64_t h0, int64_t h1, const RowPositions& at,
                     const HeadPrep& prep = {});

// Query heads j0:j1 of batch row b as attention reads them: prepared by `prep` and rounded
// to bf16 (a fused attention's q; exactly qk_norm, rope and their bf16 stores), or as
// stored in q when `prep` is null. out[(j - j0) * hd + d].
void load_q_heads(const TensorBuffer& q, int64_t b, int64_t j0, int64_t j1, int64_t hd, const HeadPrep* prep,
                  int64_t pos, float* out);

struct AttentionShape {
  int64_t group = 1;  // query heads per kv head
  int64_t head_dim = 0;
  float scale = 1;
};
// Where an attention task that does not append takes position pos's k and v from: k and
// v (the raw heads) prepared by `prep` and rounded as kv_append_block stores them, so
// the result is the one reading the appended row would give (docs/ir.md, "Tasks").
struct CurrentKv {
  const TensorBuffer* k = nullptr;
  const TensorBuffer* v = nullptr;
  HeadPrep prep;
};
// Whole attention over positions 0..pos(b) of sequence seq(b) for query heads j0:j1 (kv
// head j / group); q heads as load_q_heads gives them; position pos(b) from `current`
// when given, else from the caches.
void attention_block(const TensorBuffer& q, const TensorBuffer& kc, const TensorBuffer& vc,
                     TensorBuffer& y, int64_t b0, int64_t b1, int64_t j0, int64_t j1,
                     const AttentionShape& a, const RowPositions& at, const HeadPrep* q_prep = nullptr,
                     const CurrentKv* current = nullptr);
// Positions [s0, s1) ∩ [0, pos(b)] into part[b, j, split, 0:hd+2] = (o, m, l).
void attention_partial_block(const TensorBuffer& q, const TensorBuffer& kc, const TensorBuffer& vc,
                             TensorBuffer& part, int64_t b0, int64_t b1, int64_t h0, int64_t h1,
                             const AttentionShape& a, const RowPositions& at, int64_t s0, int64_t s1,
                             int64_t split, const HeadPrep* q_prep = nullptr);
// y[b, j*hd:(j+1)*hd] for query heads j0:j1 from all splits of part.
void attention_merge_block(const TensorBuffer& part, TensorBuffer& y, int64_t b0, int64_t b1,
                           int64_t j0, int64_t j1, int64_t head_dim);

void silu_mul_block(const TensorBuffer& g, const TensorBuffer& u, TensorBuffer& y, int64_t b0,
                    int64_t b1, int64_t c0, int64_t c1);
// y = a + the sum of `partials` in their order (ranks 0, 1, ...), in f32, rounded once:
// with one partial exactly residual_add.
void all_reduce_block(const TensorBuffer& a, const std::vector<const TensorBuffer*>& partials, TensorBuffer& y,
                      int64_t b0, int64_t b1, int64_t c0, int64_t c1);
void residual_add_block(const TensorBuffer& a, const TensorBuffer& b, TensorBuffer& y,
                        int64_t b0, int64_t b1, int64_t c0, int64_t c1);

// Largest value and its lowest index over logits[b, v0:v1] for one row. NaN never wins;
// a row of NaN / -inf gives (-inf, v0). Returns false when some value is NaN or infinite.
bool argmax_row(const TensorBuffer& logits, int64_t b, int64_t v0, int64_t v1, float* value,
                int32_t* index);
// argmax_row of rows b0:b1 over [v0, v1) into slot `slot` of val / idx [B, P]; a row with
// a non-finite value is marked in ctx.recorder.
void argmax_partial_block(const TensorBuffer& logits, TensorBuffer& val, TensorBuffer& idx, int64_t b0,
                          int64_t b1, int64_t v0, int64_t v1, int64_t slot, const StepContext& ctx);
// The argmax partial of a cooperative lm_head share (docs/ir.md): the largest value over
// logits[b, ranges] and its lowest index, (-inf, 0) when no value beats -inf; non-finite
// values are marked as by argmax_partial_block.
void argmax_partial_units(const TensorBuffer& logits, TensorBuffer& val, TensorBuffer& idx, int64_t b0, int64_t b1,
                          const std::vector<std::pair<int64_t, int64_t>>& ranges, int64_t slot,
                          const StepContext& ctx);

}  // namespace mpk
