// Shared run bookkeeping for the CPU reference and executor.
#include "runtime/cpu/run_common.h"

#include <algorithm>
#include <string>

#include "ir/error.h"

namespace mpk {

std::vector<int32_t> generated_tokens(const CpuRunResult& r, size_t prompt_len, int64_t row) {
  std::vector<int32_t> out;
  for (int64_t s = std::max<int64_t>(static_cast<int64_t>(prompt_len) - 1, 0); s < r.steps; ++s)
    out.push_back(r.tokens[s][row]);
  return out;
}

RunTensors find_run_tensors(const Program& p, bool needs_logits) {
  RunTensors rt;
  TensorId table = -1;
  for (const Operator& op : p.ops) {
    if (op.kind == OpKind::kEmbedding && op.inputs.size() == 2) rt.tokens = op.inputs[1], table = op.inputs[0];
    if (op.kind == OpKind::kArgmax && op.inputs.size() == 1) rt.logits = op.inputs[0];
    if (linear_form(op).tokens >= 0) rt.logits = linear_form(op).y;  // an lm_head with argmax
    TensorId kc = -1;  // the k cache of a kv_append or a fused attention
    if (op.kind == OpKind::kKvAppend && op.outputs.size() == 2) kc = op.outputs[0];
    if (attention_form(op).fused()) kc = attention_form(op).k_cache;
    if (kc >= 0 && kc < static_cast<TensorId>(p.tensors.size()) && p.tensors[kc].shape.size() == 4) {
      const int64_t s = p.tensors[kc].shape[1];
      rt.max_seq_len = rt.max_seq_len ? std::min(rt.max_seq_len, s) : s;
    }
  }
  const auto n = static_cast<TensorId>(p.tensors.size());
  if (rt.tokens < 0 || rt.tokens >= n) throw Error("program has no embedding operator");
  if (rt.logits >= n || (needs_logits && rt.logits < 0))
    throw Error("program has no argmax operator (nor an lm_head with one)");
  const Tensor& tok = p.tensors[rt.tokens];
  if (tok.shape.size() != 1 || tok.dtype != DType::kI32)
    throw Error("tensor '" + tok.name + "' must be i32 [B]");
  rt.batch = tok.shape[0];
  if (rt.logits < 0) {
    rt.vocab = p.tensors[table].shape.at(0);
    return rt;
  }
  const Tensor& logits = p.tensors[rt.logits];
  if (logits.shape.size() != 2 || logits.shape[0] != tok.shape[0])
    throw Error("tensor '" + logits.name + "' must be [B, V]");
  rt.vocab = p.tensors[table].shape.empty() ? logits.shape[1] : p.tensors[table].shape[0];
  return rt;
}

void check_run_inputs(const RunTensors& rt, int64_t steps, const std::vector<int64_t>& prompt,
                      int64_t prompt_rows) {
  if (prompt_rows != 1 && prompt_rows != rt.batch)
    throw Error("the prompt has " + std::to_string(prompt_rows) + " rows; give 1 (every batch row) or " +
                std::to_string(rt.batch) + " (one per batch row)");
  if (prompt.size() % prompt_rows != 0)
    throw Error("the prompt's " + std::to_string(prompt_rows) + " rows differ in length");
  if (steps < 0) throw Error("steps must be >= 0, got " + std::to_string(steps));
  if (rt.max_seq_len > 0 && steps > rt.max_seq_len)
    throw Error(std::to_string(steps) + " steps exceed max_seq_len " +
                std::to_string(rt.max_seq_len) + " (step s works at position s)");
  if (prompt.empty()) throw Error("the prompt is empty; give at least one token");
  for (int64_t t : prompt)
    if (t < 0 || t >= rt.vocab)
      throw Error("prompt token " + std::to_string(t) + " is outside the vocabulary [0, " +
                  std::to_string(rt.vocab) + ")");
}

std::vector<float> gather_vocab_slices(const std::vector<std::vector<float>>& slices, int64_t rows) {
  std::vector<float> out;
  if (slices.empty() || rows <= 0) return out;
  const size_t w = slices[0].size() / static_cast<size_t>(rows);
  out.reserve(w * slices.size() * static_cast<size_t>(rows));
  for (int64_t b = 0; b < rows; ++b)
    for (const std::vector<float>& s : slices) out.insert(out.end(), s.begin() + b * w, s.begin() + (b + 1) * w);
  return out;
}

Error non_finite_logits_error(int64_t step, int64_t row) {
  return Error("step " + std::to_string(step) + ", batch row " + std::to_string(row) +
               ": the logits hold NaN or infinity, so no token is meaningful (are the weights finite?)");
}

CpuRunResult collect_result(const StepRecorder& rec, const TensorStore& store, const RunTensors& rt,
                            std::chrono::steady_clock::time_point start, int64_t steps) {
  CpuRunResult r;
  r.steps = steps < 0 ? rec.steps() : steps;
  const auto [bad_step, bad_row] = rec.first_non_finite();
  if (bad_step >= 0 && bad_step < r.steps) throw non_finite_logits_error(bad_step, bad_row);
  r.batch = rec.batch();
  double prev = 0;
  for (int64_t s = 0; s < r.steps; ++s) {
    std::vector<int32_t> toks;
    std::vector<float> tops;
    for (int64_t b = 0; b < r.batch; ++b) {
      toks.push_back(rec.token(s, b));
      tops.push_back(rec.top_logit(s, b));
    }
    r.tokens.push_back(std::move(toks));
    r.top_logits.push_back(std::move(tops));
    const double t = rec.finished_s(s, start);
    r.step_seconds.push_back(std::max(0.0, t - prev));
    prev = std::max(prev, t);
  }
  r.total_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (rt.logits < 0) return r;  // a prefill chunk
  const TensorBuffer& lg = store.at(rt.logits);
  r.logits_shape = lg.shape;
  r.logits.resize(static_cast<size_t>(lg.numel));
  for (int64_t i = 0; i < lg.numel; ++i) r.logits[i] = lg.load(i);
  return r;
}

}  // namespace mpk
