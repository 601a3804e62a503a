// compile_for_run: import, pass pipeline, verification and weights for `mpk run`.
#include "tools/run_compile.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>

#include "ir/file_io.h"
#include "ir/import/model_source.h"
#include "ir/verifier.h"
#include "passes/pass_manager.h"
#include "passes/pipeline.h"
#include "runtime/cpu/run_common.h"
#include "tools/args.h"

namespace mpk {
namespace {

namespace fs = std::filesystem;

bool has_safetensors(const std::string& dir) {
  std::error_code ec;
  if (dir.empty() || !fs::is_directory(dir, ec)) return false;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".safetensors" ||
        e.path().filename() == "model.safetensors.index.json")
      return true;
  return false;
}

}  // namespace

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

Module import_for_run(const RunRequest& r) {
  ImportOptions io;
  io.batch = r.batch;
  io.max_seq_len = r.max_seq_len;
  return load_model_source(resolve_model_source(r.model), io);
}

void schedule_for_run(Module& m, const std::string& pipeline) {
  PassManager pm(parse_pipeline(pipeline));
  pm.run(m);
  verify_or_throw(m);
}

std::string run_pipeline(const RunRequest& r) {
  if (!r.pipeline.empty()) return r.pipeline;
  return default_pipeline_with(r.policy, "decompose", r.costs);
}

uint64_t weights_seed(const RunRequest& r) { return parse_u64(r.weights_seed, "option '--weights-seed'"); }

void check_steps_fit(const Module& m, int64_t steps) {
  const int64_t max_seq_len = find_run_tensors(m.program).max_seq_len;
  if (max_seq_len > 0 && steps > max_seq_len)
    throw Error("option '--steps' (" + std::to_string(steps) + ") exceeds the module's max_seq_len (" +
                std::to_string(max_seq_len) + "): step s works at position s");
}

CompiledRun compile_for_run(const RunRequest& r) {
  const uint64_t seed = weights_seed(r);
  CompiledRun out;
  const auto t0 = std::chrono::steady_clock::now();
  out.module = import_for_run(r);
  if (out.module.graph.schedule.empty() || !r.pipeline.empty()) {
    out.pipeline = run_pipeline(r);
    schedule_for_run(out.module, out.pipeline);
  } else {
    verify_or_throw(out.module);
  }
  check_steps_fit(out.module, r.steps);
  out.compile_s = seconds_since(t0);

  const auto t1 = std::chrono::steady_clock::now();
  const std::string dir = checkpoint_dir_of(out.module);
  if (has_safetensors(dir)) {
    out.weights = load_weights(out.module, dir);
    out.weights_note = "checkpoint " + dir;
  } else {
    out.weights = random_weights(out.module, seed);
    out.weights_note = out.weights.source() +
                       (dir.empty() ? "" : " (no *.safetensors in " + dir + ")");
  }
  out.weights_s = seconds_since(t1);
  return out;
}

std::string join_tokens(const std::vector<int32_t>& tokens) {
  std::string s;
  for (int32_t t : tokens) s += (s.empty() ? "" : " ") + std::to_string(t);
  return s;
}

void write_logits(const std::string& path, const std::vector<float>& logits, int64_t batch,
                  int64_t step, const std::string& model) {
  write_file_safely(path, std::string(reinterpret_cast<const char*>(logits.data()), logits.size() * sizeof(float)));
  const int64_t vocab = batch > 0 ? static_cast<int64_t>(logits.size()) / batch : 0;
  const nlohmann::json side = {{"dtype", "f32"},        {"byte_order", "little"},
                               {"shape", {batch, vocab}}, {"step", step},
                               {"model", model}};
  try {
    write_file_safely(path + ".json", side.dump(2) + "\n");
  } catch (const Error&) {
    std::error_code ec;
    if (fs::is_regular_file(path + ".json", ec)) fs::remove(path + ".json", ec);  // it describes old logits
    throw;
  }
}

void check_finite_logits(const std::vector<float>& logits, int64_t batch, int64_t step) {
  const size_t width = batch > 0 ? logits.size() / static_cast<size_t>(batch) : 0;
  for (size_t i = 0; i < logits.size(); ++i)
    if (!std::isfinite(logits[i]))
      throw non_finite_logits_error(step, static_cast<int64_t>(i / std::max<size_t>(width, 1)));
}

}  // namespace mpk
