// What every `mpk run` backend does before it runs: import the model (preset, Hugging
// Face directory, config.json, or a .mpk module), run the pass pipeline (the default
// one with assign-sm{policy=<policy>} unless the request gives a full pipeline; a .mpk
// module that is already scheduled is used as it is), verify it, and load the weights
// (the checkpoint's safetensors when there are any, else deterministic random weights
// from --weights-seed).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "ir/module.h"
#include "runtime/weights/weights.h"
#include "tools/run_backends.h"

namespace mpk {

struct CompiledRun {
  Module module;             // scheduled and verified
  Weights weights;
  std::string pipeline;      // what ran; "" when a scheduled .mpk was used as it is
  std::string weights_note;  // one line: where the weights came from
  double compile_s = 0;      // import + passes + verify
  double weights_s = 0;
};

// The default pipeline with assign-sm{policy=P}, or request.pipeline.
std::string run_pipeline(const RunRequest& request);

// Imports request.model: a preset, an HF directory, a config.json, or a .mpk module
// (loaded as it is). Throws mpk::Error naming the model.
Module import_for_run(const RunRequest& request);
// Runs `pipeline` on the module and verifies it; throws naming the pass or rule.
void schedule_for_run(Module& module, const std::string& pipeline);

double seconds_since(std::chrono::steady_clock::time_point t);

// The seed of --weights-seed; throws mpk::Error when it is not an unsigned integer.
uint64_t weights_seed(const RunRequest& request);

// Throws mpk::Error when `steps` exceeds the module's max_seq_len (step s works at
// position s; every backend checks this before it runs).
void check_steps_fit(const Module& module, int64_t steps);

// Throws mpk::Error naming the model, pass, verifier rule or checkpoint file, or steps
// beyond max_seq_len.
CompiledRun compile_for_run(const RunRequest& request);

// "12 7 430": token ids separated by spaces.
std::string join_tokens(const std::vector<int32_t>& tokens);

// --dump-logits: the f32 logits [batch, vocab] raw at `path`, and `path`.json with
// dtype, byte order, shape, step and model, each through write_file_safely (ir/file_io.h):
// an old file is replaced only by a complete new one, and when the .json cannot be
// written the old .json is removed rather than left describing other logits. Throws
// mpk::Error naming the file.
void write_logits(const std::string& path, const std::vector<float>& logits, int64_t batch,
                  int64_t step, const std::string& model);

// Throws mpk::Error naming the step and the first batch row whose logits [batch, vocab]
// hold a NaN or an infinity.
void check_finite_logits(const std::vector<float>& logits, int64_t batch, int64_t step);

}  // namespace mpk
