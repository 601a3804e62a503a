// What a CPU run returns, and the checks and bookkeeping shared by the whole-operator
// reference (reference.h) and the task-graph executor (executor.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "ir/error.h"
#include "ir/module.h"
#include "runtime/cpu/numerics.h"

namespace mpk {

struct CpuRunResult {
  int64_t steps = 0;
  int64_t first_step = 0;  // steps before it ran as a prefill (run_cpu_prefilled): token -1
  int64_t batch = 0;
  std::vector<std::vector<int32_t>> tokens;      // [step][row]: the argmax of each step
  std::vector<std::vector<float>> top_logits;    // [step][row]: the largest logit
  std::vector<float> logits;                     // the last step's logits, row-major
  std::vector<int64_t> logits_shape;             // {batch, vocab}
  std::vector<double> step_seconds;              // per step: finish minus previous finish
  double total_seconds = 0;
  int64_t tasks_run = 0;                         // (task, step) executions; ops for the reference
};

// The generated tokens of one batch row: the argmax of steps P-1, P, ... (docs/ir.md).
std::vector<int32_t> generated_tokens(const CpuRunResult& r, size_t prompt_len, int64_t row = 0);

// The tensors a run reads and writes by name-independent roles: the embedding's token
// input (== argmax output) and the argmax's logits input (or, after fuse-argmax, the
// logits of the lm_head that writes the tokens). Throws mpk::Error when the program
// lacks an embedding, or an argmax when `needs_logits` (a prefill chunk has none: logits
// -1).
struct RunTensors {
  TensorId tokens = -1;
  TensorId logits = -1;
  int64_t batch = 0;
  int64_t vocab = 0;        // the embedding table's rows: the tokens a prompt may hold (the
                            // logits' width, or, split over tensor-parallel ranks, tp times it)
  int64_t max_seq_len = 0;  // smallest sequence dimension of any kv cache
};
RunTensors find_run_tensors(const Program& p, bool needs_logits = true);

// Throws mpk::Error for steps < 0, steps beyond max_seq_len, an empty prompt, a prompt
// token outside the vocabulary, or prompt rows other than 1 or the batch (or rows of
// unequal length).
void check_run_inputs(const RunTensors& rt, int64_t steps, const std::vector<int64_t>& prompt,
                      int64_t prompt_rows = 1);

// A prompt's tokens per row (docs/ir.md, "Module"): `rows` 1 (every batch row reads
// them) or the batch (rows of equal length, row b read by batch row b).
inline int64_t prompt_length(const std::vector<int64_t>& prompt, int64_t rows) {
  return static_cast<int64_t>(prompt.size()) / rows;
}
// The token batch row b reads at step s < prompt_length.
inline int64_t prompt_token(const std::vector<int64_t>& prompt, int64_t rows, int64_t b, int64_t s) {
  return prompt[(rows == 1 ? 0 : b) * prompt_length(prompt, rows) + s];
}

// The logits [rows, N * w] of a module whose LM head is split over N tensor-parallel ranks
// by vocabulary, from each rank's slice [rows, w], rank order = vocabulary order.
std::vector<float> gather_vocab_slices(const std::vector<std::vector<float>>& slices, int64_t rows);

// Throws mpk::Error naming the first tensor-parallel rank whose tokens differ from rank
// 0's (every rank computes the same argmax).
template <class Result>
void check_ranks_agree(const std::vector<Result>& results) {
  for (size_t r = 1; r < results.size(); ++r)
    if (results[r].tokens != results[0].tokens)
      throw Error("rank " + std::to_string(r) + " computed other tokens than rank 0");
}

// The error for a step whose logits hold a NaN or an infinity in batch row `row`.
Error non_finite_logits_error(int64_t step, int64_t row);

// Fills tokens, top logits, timings and the final logits of the first `steps` steps (-1:
// all of the recorder's). Throws non_finite_logits_error for the first of those steps and
// batch row whose logits hold a NaN or an infinity.
CpuRunResult collect_result(const StepRecorder& rec, const TensorStore& store, const RunTensors& rt,
                            std::chrono::steady_clock::time_point start, int64_t steps = -1);

}  // namespace mpk
