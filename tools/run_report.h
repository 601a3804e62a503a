// What `mpk run` prints around an executor's run (driver/executor.h): the header of a
// decode run (model, graph, weights, how the executor runs), the tokens of each step and
// the generated ones with the time per step or token, the simulator's summary; and the
// --dump-logits files.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "driver/compile.h"
#include "driver/executor.h"

namespace mpk {

// "model", "graph", "weights" and, with `executor_line`, the executor's own line (cpu,
// gpu), to `out`.
void print_run_header(std::FILE* out, const Compiled& compiled, const Executor& executor, int64_t batch,
                      int64_t max_seq_len, bool executor_line = true);

// The steps' tokens (cpu: with the top logit and the time of each step), the generated
// tokens of each batch row, and the time per step (cpu) or per token (gpu).
void print_decode(const Executor& executor, const ExecResult& result, size_t prompt_length,
                  bool traced);

// The sim backend's report: model, graph, the cost model, what simulating and storing
// took, the stored run's brief statistics, and how to open it.
void print_sim_report(const Compiled& compiled, const Executor& executor, const ExecResult& result,
                      const std::string& trace_path, const StoredRun& stored, double write_s);

// "12 7 430": token ids separated by spaces.
std::string join_tokens(const std::vector<int32_t>& tokens);

// --dump-logits: the f32 logits [batch, vocab] raw at `path`, and `path`.json with
// dtype, byte order, shape, step and model, each through write_file_safely (ir/file_io.h):
// an old file is replaced only by a complete new one, and when the .json cannot be
// written the old .json is removed rather than left describing other logits. Throws
// mpk::Error naming the file.
void write_logits(const std::string& path, const std::vector<float>& logits, int64_t batch,
                  int64_t step, const std::string& model);

}  // namespace mpk
