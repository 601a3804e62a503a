// compile: a model source -> the imported Module -> the pass pipeline -> a verified,
// scheduled Module. The one path every front end compiles through (mpk run, bench,
// experiment, mpk-opt's input, the studio's fallback for old trace.db files). A model
// spec is resolved once, by ir/import/model_source.h: a preset, a Hugging Face
// directory or config.json (imported), or a .mpk module (loaded as it is).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <string>

#include "ir/module.h"

namespace mpk {

struct CompileRequest {
  std::string model = "llama-3.2-1b";  // a model spec (ir/import/model_source.h)
  int64_t batch = 1;                   // import options; they do not apply to a .mpk
  int64_t max_seq_len = 0;             // 0: the importer's default
  std::string policy;                  // assign-sm policy of the default pipeline; "": its default
  std::string pipeline;                // a full pass pipeline; "" = the default with `policy`
  std::string costs;                   // a cost file the default pipeline's assign-sm plans
                                       // with (ir/cost_params.h); "" = the machine model's
  std::string relative_to;             // a folder a relative module path is also looked for in
  int64_t tp = 0;                      // > 0: shard-tp{ranks=tp} runs first (tensor parallel)
  int64_t chunk = 0;                   // > 0: then prefill-chunk{rows=chunk} (a prefill chunk,
                                       // docs/ir.md "Prefill chunks")
};

struct Compiled {
  Module module;         // scheduled and verified
  std::string pipeline;  // what ran; "" when a scheduled .mpk was used as it is
  double compile_s = 0;  // import + passes + verify
};

// The rows of a prefill chunk (CompileRequest::chunk) that suit a model of `hidden`
// columns on the GPU for a prefill of `end` positions. A chunk step's time grows with its
// rows, less than in proportion (on an H100, llama-3.2-1b: 2.6 ms at 32 rows, 4.8 at 64,
// 9.0 at 128; docs/benchmarks.md), so: the split-K chunk, the most rows in steps of 16 up
// to abi::kTcMaxRows whose normed x a chunk's tensor-core linears keep whole in shared
// memory (abi::tc_x_budget; 16 when none is: llama-3.2-1b 32, qwen3-8b 16), when the
// prefill fits it; else 64 when it fits that; else abi::kTcMaxChunkRows.
int64_t auto_prefill_chunk(int64_t hidden, int64_t end);

// The pipeline a request runs: request.pipeline, else the default pipeline with
// assign-sm{policy=<policy>} (and costs=<costs> when given); after shard-tp{ranks=<tp>}
// when tp > 0 and prefill-chunk{rows=<chunk>} when chunk > 0.
std::string pipeline_of(const CompileRequest& request);

// Imports request.model (a .mpk module is loaded and verified as it is). Throws
// mpk::Error naming the model.
Module import_source(const CompileRequest& request);

// A pass pipeline parsed and resolved once (so that a malformed one, an unknown pass or
// a bad option fails before any work), then run with a hook before each pass.
class PassPipeline {
 public:
  // Throws mpk::Error naming the column, the unknown pass or the option.
  explicit PassPipeline(const std::string& text);
  ~PassPipeline();
  PassPipeline(PassPipeline&&) noexcept;
  PassPipeline& operator=(PassPipeline&&) noexcept;

  size_t size() const;
  const std::string& pass(size_t index) const;  // its name
  // Runs the passes over `module` (recording them in its provenance); `before(i)` is
  // called before pass i and may throw to stop. Throws mpk::Error naming a failed pass.
  // Does not verify the result.
  void run(Module& module, const std::function<void(size_t)>& before = nullptr);

  // Runs the pipeline over a module that may be compiled already (a run's stored module)
  // so that the result is what compiling its model gives: a module without tasks, or a
  // pipeline without decompose (e.g. one assign-sm), runs as run() does; otherwise the
  // module's task graph is cleared and re-derived over its program, starting from the
  // first pass that still applies: the pipeline's passes before the first decompose (the
  // program passes, e.g. the fusions) must start with the module's own (its provenance),
  // which its program has been through already, and only those after them run; a
  // pipeline without program passes starts from the stored program as it is (its
  // fusions stay). The provenance becomes the module's program passes plus what ran.
  // Throws mpk::Error when the program passes do not start with the module's (a program
  // cannot be un-fused).
  void recompile(Module& module, const std::function<void(size_t)>& before = nullptr);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Runs `pipeline` over `module` and verifies the result; throws mpk::Error naming the
// pass or the verifier rule (a malformed pipeline or an unknown pass before any pass).
void run_pipeline(Module& module, const std::string& pipeline);

// Imports, then runs the request's pipeline unless the model is a scheduled module and
// no pipeline was given (then verifies it only). Throws mpk::Error naming the model,
// pass or verifier rule.
Compiled compile(const CompileRequest& request);

// compile() with the verifier on a second thread while the caller goes on (mpk run's
// simulator path overlaps it with simulating and storing the run). The module may be
// simulated at once, but nothing lasting (stored, saved, run on a device) may come of it
// before wait_verified() has returned: it rethrows what the verifier found. Not movable:
// the verifier reads this object's module.
class CompileInFlight {
 public:
  explicit CompileInFlight(const CompileRequest& request);
  ~CompileInFlight();
  CompileInFlight(const CompileInFlight&) = delete;
  CompileInFlight& operator=(const CompileInFlight&) = delete;

  const Compiled& compiled() const { return compiled_; }
  void wait_verified();

 private:
  Compiled compiled_;
  std::future<void> verified_;
};

// Throws mpk::Error when `steps` exceeds the module's max_seq_len: step s works at
// position s (a prefill chunk's at s x its rows). Every executor checks it before it runs.
void check_steps_fit(const Module& module, int64_t steps);

double seconds_since(std::chrono::steady_clock::time_point t);

}  // namespace mpk
