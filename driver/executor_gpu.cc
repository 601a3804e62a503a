// The gpu executor: the module's megakernel (generated and compiled, or loaded from the
// cache, when the executor is made) decodes all steps in ONE persistent launch, after one
// warm-up launch that pays the one-time costs. A run with a token sink or a stop condition
// (text I/O) streams its tokens as the kernel makes them and stops in the kernel, with no
// warm-up (its time to the first token is the user's). A module sharded over
// tensor-parallel ranks runs one megakernel per GPU (runtime/gpu/tp_megakernel.h). A run
// with a prefill chunk (ExecRequest::prefill) builds the chunk's megakernel once, sharing
// the decode megakernel's KV caches and weights, and launches it and then the decode from
// step P - 1 back to back (GpuMegakernel::run_prefilled). Built only with MPK_WITH_CUDA.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "driver/compile.h"
#include "driver/executor.h"
#include "driver/gpu_decoder.h"
#include "driver/weights.h"
#include "runtime/cpu/run_common.h"
#include "traces/rank_clocks.h"

namespace mpk {
namespace {

// Throws naming the step and the first batch row whose logits hold a NaN or an infinity.
void check_finite_logits(const std::vector<float>& logits, int64_t batch, int64_t step) {
  const size_t width = batch > 0 ? logits.size() / static_cast<size_t>(batch) : 0;
  for (size_t i = 0; i < logits.size(); ++i)
    if (!std::isfinite(logits[i]))
      throw non_finite_logits_error(step, static_cast<int64_t>(i / std::max<size_t>(width, 1)));
}

GpuOptions gpu_options(const ExecutorOptions& o) {
  GpuOptions g;
  g.watchdog_s = o.watchdog_s;
  return g;
}

class GpuExecutor : public Executor {
 public:
  GpuExecutor(const Module& m, const ExecutorOptions& o)
      : module_(m), options_(o), weights_(load_run_weights(m, o.weights_seed)), gpu_(m, weights_, gpu_options(o)) {}

  const char* kind() const override { return "gpu"; }
  const std::string& weights_note() const override { return weights_.note; }
  double weights_seconds() const override { return weights_.seconds; }

  std::string describe() const override {
    const GpuMegakernel& g = gpu_.rank0();
    const Megakernel& k = g.kernel();
    const CompiledKernel& c = g.compiled();
    char compiled[64];
    std::snprintf(compiled, sizeof compiled, "compiled in %.1f s", c.compile_seconds);
    char line[512];
    std::snprintf(line, sizeof line,
                  "%s, %d SMs; megakernel %s (%zu task bodies, %d threads, %d x %d B stream slots)",
                  gpu_.gpus().c_str(), g.info().sm_count,
                  c.from_cache ? "loaded from the cache" : compiled, k.instantiations.size(), k.threads,
                  k.stages, k.slot_bytes);
    return line;
  }

  ExecResult run(const ExecRequest& req) override {
    check_steps_fit(module_, req.steps);
    GpuRunOptions o;
    o.steps = req.steps;
    o.prompt = req.prompt;
    o.prompt_rows = req.prompt_rows;
    const bool streams = req.on_step || !req.stop.tokens.empty();
    GpuMegakernel* chunk = req.prefill ? &prefill_kernel(*req.prefill) : nullptr;
    GpuRunResult prefill;  // the prefill launch of the last run, when there is a chunk
    auto launch = [&](const GpuRunOptions& run) {
      if (!chunk) return gpu_.run(run);
      GpuPrefillResult pr = gpu_.single("a prefill").run_prefilled(*chunk, run);
      prefill = std::move(pr.prefill);
      return std::move(pr.decode);
    };
    if (!streams) launch(o);  // warm-up: the first launch pays one-time costs
    o.trace = req.record;
    StepFeed feed(req.on_step, req.stop);
    if (streams) {
      o.on_step = [&](int64_t step, const std::vector<int32_t>& tokens) { feed(step, tokens); };
      o.stop_ids = req.stop.tokens;
      o.first_generated = req.stop.from_step;
    }
    GpuRunResult r = launch(o);
    if (r.steps > r.first_step) check_finite_logits(r.logits, r.batch, r.steps - 1);  // the host sees the last step's only
    ExecResult out = result_of(r);
    out.stopped_at = r.stopped_at;
    out.streamed = streams;
    out.first_step = r.first_step;
    if (!r.peer_traces.empty()) rank_clocks_ = align_rank_clocks(module_, out.executions);
    if (chunk && prefill.steps > 0) out.prefill = std::make_shared<ExecResult>(result_of(prefill));
    return out;
  }

  RunInfo run_info(const ExecResult& r) const override {
    const Megakernel& k = gpu_.rank0().kernel();
    RunInfo info;
    info.kind = "gpu";
    info.options = "threads=" + std::to_string(k.threads) + " stages=" + std::to_string(k.stages) +
                   " slot_bytes=" + std::to_string(k.slot_bytes) + " inflight=" + std::to_string(k.inflight) +
                   " cubin=" + gpu_.rank0().compiled().hash + " weights=" + weights_.note;
    if (gpu_.ranks() > 1) info.options += " tp=" + std::to_string(gpu_.ranks());
    if (!r.executions.empty() && !rank_clocks_.empty()) {  // how the ranks' clocks were aligned
      info.options += " rank_clock_ns=";
      for (const RankClock& c : rank_clocks_) info.options += (c.rank ? "," : "") + std::to_string(c.offset_ns);
    }
    if (r.dropped) info.options += " trace_overflow=" + std::to_string(r.dropped);
    info.batch = r.batch;
    info.steps = r.steps;
    const GpuInfo& gi = gpu_.rank0().info();
    info.device.name = gi.name;
    info.device.sm_count = gi.sm_count;
    info.device.clock_khz = gi.clock_khz;
    info.device.mem_clock_khz = gi.mem_clock_khz;
    info.device.mem_bandwidth = static_cast<int64_t>(module_.machine.mem_bandwidth);
    info.device.smem_per_sm = gi.smem_optin;
    return info;
  }

 private:
  // The prefill chunk's megakernel, made at its first use (and again for another chunk).
  GpuMegakernel& prefill_kernel(const Module& chunk) {
    GpuMegakernel& decode = gpu_.single("a prefill");
    if (chunk_of_ != &chunk) {
      chunk_.reset();
      chunk_ = std::make_unique<GpuMegakernel>(chunk, weights_.weights, decode, gpu_options(options_));
      chunk_of_ = &chunk;
    }
    return *chunk_;
  }

  // Steps, tokens, logits, kernel time and trace of a run (every rank's trace).
  static ExecResult result_of(GpuRunResult& r) {
    ExecResult out;
    out.steps = r.steps;
    out.batch = r.batch;
    out.tokens = std::move(r.tokens);
    out.seconds = r.kernel_ms * 1e-3;
    out.logits = std::move(r.logits);
    out.dropped = r.trace_overflow;
    auto add_trace = [&](const std::vector<abi::TraceRecord>& trace, int32_t rank) {
      for (const abi::TraceRecord& t : trace)
        out.executions.push_back({t.task, t.step, t.worker, t.sm, static_cast<int64_t>(t.wait_begin_ns),
                                  static_cast<int64_t>(t.start_ns), static_cast<int64_t>(t.end_ns), rank});
    };
    add_trace(r.trace, 0);
    for (size_t p = 0; p < r.peer_traces.size(); ++p) add_trace(r.peer_traces[p], static_cast<int32_t>(p + 1));
    return out;
  }

  const Module& module_;
  const ExecutorOptions options_;
  RunWeights weights_;
  GpuDecoder gpu_;
  std::unique_ptr<GpuMegakernel> chunk_;  // the prefill chunk's, sharing the decode's caches and weights
  const Module* chunk_of_ = nullptr;      // the module chunk_ runs
  std::vector<RankClock> rank_clocks_;   // of the last traced tensor-parallel run
};

}  // namespace

std::unique_ptr<Executor> make_gpu_executor(const Module& module, const ExecutorOptions& options) {
  return std::make_unique<GpuExecutor>(module, options);
}

}  // namespace mpk
