// compile(): import through ir/import/model_source.h, the pass manager, the verifier.
#include "driver/compile.h"

#include <algorithm>

#include "ir/error.h"
#include "ir/import/model_source.h"
#include "ir/row_positions.h"
#include "ir/verifier.h"
#include "passes/pass_manager.h"
#include "passes/pipeline.h"
#include "passes/policies/policy.h"
#include "runtime/cpu/run_common.h"
#include "runtime/device/abi.cuh"

namespace mpk {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

int64_t auto_prefill_chunk(int64_t hidden, int64_t end) {
  int64_t rows = 16;
  for (int64_t c = 32; c <= abi::kTcMaxRows; c += 16)
    if (abi::tc_whole_x_bytes(c, hidden, true) <= abi::tc_x_budget(true, c)) rows = c;
  if (end <= rows) return rows;
  return end <= 64 ? 64 : abi::kTcMaxChunkRows;
}

std::string pipeline_of(const CompileRequest& r) {
  const std::string shard = (r.tp > 0 ? "shard-tp{ranks=" + std::to_string(r.tp) + "}," : "") +
                            (r.chunk > 0 ? "prefill-chunk{rows=" + std::to_string(r.chunk) + "}," : "");
  if (!r.pipeline.empty()) return shard + r.pipeline;
  return shard + default_pipeline_with(r.policy.empty() ? kDefaultPolicy : r.policy, "decompose", r.costs);
}

Module import_source(const CompileRequest& r) {
  ImportOptions io;
  io.batch = r.batch;
  io.max_seq_len = r.max_seq_len;
  return load_model_source(resolve_model_source(r.model, r.relative_to), io);
}

namespace {

// Calls the hook before each pass, counting them from `first`.
class BeforeEachPass : public PassInstrument {
 public:
  BeforeEachPass(std::function<void(size_t)> hook, size_t first) : hook_(std::move(hook)), next_(first) {}
  void before_pass(const std::string&, const Module&) override { hook_(next_++); }

 private:
  std::function<void(size_t)> hook_;
  size_t next_;
};

// The index of the first decompose (the end when there is none): the entries before it
// are the program passes.
size_t first_decompose(const Pipeline& p) {
  return static_cast<size_t>(std::find_if(p.begin(), p.end(),
                                          [](const PipelineEntry& e) { return e.pass == "decompose"; }) -
                             p.begin());
}

void run_entries(Module& m, Pipeline entries, size_t first, const std::function<void(size_t)>& before) {
  PassManager pm(std::move(entries));
  if (before) pm.add_instrument(std::make_unique<BeforeEachPass>(before, first));
  pm.run(m);
}

}  // namespace

struct PassPipeline::Impl {
  explicit Impl(const std::string& text) : pipeline(parse_pipeline(text)), check(pipeline) {}
  Pipeline pipeline;
  PassManager check;  // resolves the names and options now
};

PassPipeline::PassPipeline(const std::string& text) : impl_(std::make_unique<Impl>(text)) {}
PassPipeline::~PassPipeline() = default;
PassPipeline::PassPipeline(PassPipeline&&) noexcept = default;
PassPipeline& PassPipeline::operator=(PassPipeline&&) noexcept = default;

size_t PassPipeline::size() const { return impl_->pipeline.size(); }
const std::string& PassPipeline::pass(size_t i) const { return impl_->pipeline.at(i).pass; }

void PassPipeline::run(Module& m, const std::function<void(size_t)>& before) {
  run_entries(m, impl_->pipeline, 0, before);
}

void PassPipeline::recompile(Module& m, const std::function<void(size_t)>& before) {
  const Pipeline& mine = impl_->pipeline;
  const size_t graph_from = first_decompose(mine);
  if (m.graph.tasks.empty() || graph_from == mine.size()) return run(m, before);
  const Pipeline own = m.provenance.pipeline.empty() ? Pipeline{} : parse_pipeline(m.provenance.pipeline);
  const Pipeline own_program(own.begin(), own.begin() + static_cast<ptrdiff_t>(first_decompose(own)));
  const Pipeline program(mine.begin(), mine.begin() + static_cast<ptrdiff_t>(graph_from));
  // The program passes that still apply: none when the pipeline has none (the stored
  // program as it is) or the module's own; those after the module's own when the
  // pipeline starts with them.
  const bool extends = program.size() >= own_program.size() &&
                       std::equal(own_program.begin(), own_program.end(), program.begin());
  if (!program.empty() && !extends) {
    const auto shown = [](const Pipeline& p) {
      return p.empty() ? std::string("none") : "'" + print_pipeline(p) + "'";
    };
    throw Error("the pipeline's passes before decompose (" + shown(program) +
                ") do not start with the module's (" + shown(own_program) +
                "): a compiled module's program cannot be un-fused (leave them out to start "
                "from its program as it is, or compile the model again: mpk-opt MODEL "
                "--pass-pipeline=...)");
  }
  const size_t from = program.empty() ? graph_from : own_program.size();
  m.graph = TaskGraph{};
  m.provenance.pipeline = print_pipeline(own_program);
  run_entries(m, Pipeline(mine.begin() + static_cast<ptrdiff_t>(from), mine.end()), from, before);
}

void run_pipeline(Module& m, const std::string& pipeline) {
  PassPipeline(pipeline).run(m);
  verify_or_throw(m);
}

namespace {

// The prefill chunk of a compiled module (its program is fused already): prefill-chunk,
// then the module's own passes from decompose on (its decompose options and policy).
std::string chunk_pipeline_of(const Module& m, int64_t chunk) {
  Pipeline own = parse_pipeline(m.provenance.pipeline.empty() ? kDefaultPipeline : m.provenance.pipeline);
  if (first_decompose(own) == own.size()) own = parse_pipeline(kDefaultPipeline);
  const Pipeline graph(own.begin() + static_cast<ptrdiff_t>(first_decompose(own)), own.end());
  return "prefill-chunk{rows=" + std::to_string(chunk) + "}," + print_pipeline(graph);
}

// compile() up to the verifier: import, and the pipeline unless the model is a scheduled
// module used as it is.
Compiled compile_unverified(const CompileRequest& r) {
  Compiled out;
  const auto t0 = std::chrono::steady_clock::now();
  out.module = import_source(r);
  if (out.module.graph.schedule.empty() || !r.pipeline.empty()) {
    out.pipeline = pipeline_of(r);
    PassPipeline(out.pipeline).run(out.module);
  } else if (r.chunk > 0) {
    out.pipeline = chunk_pipeline_of(out.module, r.chunk);
    out.module.graph = TaskGraph{};
    PassPipeline(out.pipeline).run(out.module);
  }
  out.compile_s = seconds_since(t0);
  return out;
}

}  // namespace

Compiled compile(const CompileRequest& r) {
  const auto t0 = std::chrono::steady_clock::now();
  Compiled out = compile_unverified(r);
  verify_or_throw(out.module);
  out.compile_s = seconds_since(t0);
  return out;
}

CompileInFlight::CompileInFlight(const CompileRequest& r)
    : compiled_(compile_unverified(r)),
      verified_(std::async(std::launch::async, [this] { verify_or_throw(compiled_.module); })) {}

CompileInFlight::~CompileInFlight() {
  if (verified_.valid()) verified_.wait();
}

void CompileInFlight::wait_verified() {
  if (verified_.valid()) verified_.get();
}

void check_steps_fit(const Module& m, int64_t steps) {
  const int64_t max_seq_len = find_run_tensors(m.program, false).max_seq_len;
  const int64_t chunk = chunk_rows(m);
  if (max_seq_len > 0 && steps > prefill_steps(max_seq_len, chunk))
    throw Error("option '--steps' (" + std::to_string(steps) + ") exceeds the module's max_seq_len (" +
                std::to_string(max_seq_len) + "): step s works at position s" +
                (chunk > 1 ? " x " + std::to_string(chunk) + " (a prefill chunk's rows)" : ""));
}

}  // namespace mpk
