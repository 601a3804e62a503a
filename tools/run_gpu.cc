// The `gpu` backend of `mpk run`: compiles the model, generates and compiles (or loads
// from the cache) its megakernel, and decodes all steps in ONE persistent launch on the
// GPU. Prints the tokens and the per-token latency (launch time / steps, after one
// warm-up launch); with --trace, the measured launch records every task execution and
// the run is written to trace.db.
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "ir/error.h"
#include "runtime/gpu/megakernel_runtime.h"
#include "tools/run_backends.h"
#include "tools/run_compile.h"
#include "traces/trace_db.h"

namespace mpk {
namespace {

void write_gpu_trace(const std::string& path, const CompiledRun& c, const RunRequest& req,
                     const GpuMegakernel& g, const GpuRunResult& r) {
  std::vector<Execution> execs;
  execs.reserve(r.trace.size());
  for (const abi::TraceRecord& t : r.trace)
    execs.push_back({t.task, t.step, t.worker, t.sm, static_cast<int64_t>(t.wait_begin_ns),
                     static_cast<int64_t>(t.start_ns), static_cast<int64_t>(t.end_ns)});
  const Megakernel& k = g.kernel();
  RunInfo info;
  info.kind = "gpu";
  info.model = req.model;
  info.options = "threads=" + std::to_string(k.threads) + " stages=" + std::to_string(k.stages) +
                 " slot_bytes=" + std::to_string(k.slot_bytes) +
                 " inflight=" + std::to_string(k.inflight) + " cubin=" + g.compiled().hash +
                 " weights=" + c.weights_note;
  if (r.trace_overflow) info.options += " trace_overflow=" + std::to_string(r.trace_overflow);
  info.batch = r.batch;
  info.steps = r.steps;
  const GpuInfo& gi = g.info();
  info.device.name = gi.name;
  info.device.sm_count = gi.sm_count;
  info.device.clock_khz = gi.clock_khz;
  info.device.mem_clock_khz = gi.mem_clock_khz;
  info.device.mem_bandwidth = static_cast<int64_t>(c.module.machine.mem_bandwidth);
  info.device.smem_per_sm = gi.smem_optin;
  const int64_t id = write_run(path, c.module, info, execs);
  std::printf("trace: run %lld (%zu executions%s) -> %s\n", static_cast<long long>(id), execs.size(),
              r.trace_overflow ? ", some dropped: buffer full" : "", path.c_str());
}

int run_gpu_backend(const RunRequest& req) {
  const CompiledRun c = compile_for_run(req);
  const Module& m = c.module;
  GpuOptions go;
  go.watchdog_s = req.watchdog_s;
  GpuMegakernel g(m, c.weights, go);
  const Megakernel& k = g.kernel();

  std::printf("model    %s (%s), batch %lld, max_seq_len %lld\n", m.name.c_str(),
              m.provenance.source.c_str(), static_cast<long long>(k.batch),
              static_cast<long long>(k.max_seq_len));
  std::printf("graph    %s | %zu tasks, %zu events, %zu workers, policy %s\n",
              c.pipeline.empty() ? "(scheduled module)" : c.pipeline.c_str(), m.graph.tasks.size(),
              m.graph.events.size(), m.graph.schedule.workers.size(), m.graph.schedule.policy.c_str());
  std::printf("weights  %s\n", c.weights_note.c_str());
  char compiled[64];
  std::snprintf(compiled, sizeof compiled, "compiled in %.1f s", g.compiled().compile_seconds);
  std::printf("gpu      %s, %d SMs; megakernel %s (%zu task bodies, %d threads, %d x %d B stream slots)\n",
              g.info().name.c_str(), g.info().sm_count, g.compiled().from_cache ? "loaded from the cache" : compiled,
              k.instantiations.size(), k.threads, k.stages, k.slot_bytes);

  GpuRunOptions o;
  o.steps = req.steps;
  o.prompt = req.prompt;
  g.run(o);  // warm-up: the first launch pays one-time costs
  o.trace = !req.trace.empty();
  const GpuRunResult r = g.run(o);
  check_finite_logits(r.logits, r.batch, r.steps - 1);  // the host sees the last step's logits only

  std::printf("\n%5s  %s\n", "step", "token");
  for (int64_t s = 0; s < r.steps; ++s) std::printf("%5lld  %s\n", static_cast<long long>(s), join_tokens(r.tokens[s]).c_str());
  std::printf("\n");
  const size_t first = req.prompt.size() - 1;
  for (int64_t b = 0; b < r.batch; ++b) {
    std::vector<int32_t> gen;
    for (size_t s = first; s < r.tokens.size(); ++s) gen.push_back(r.tokens[s][b]);
    const std::string row = r.batch > 1 ? " [row " + std::to_string(b) + "]" : "";
    std::printf("generated%s: %s\n", row.c_str(), join_tokens(gen).c_str());
  }
  std::printf("time per token: %.4f ms (one launch of %lld steps: %.3f ms%s)\n",
              r.kernel_ms / static_cast<double>(r.steps), static_cast<long long>(r.steps), r.kernel_ms,
              o.trace ? ", tracing on" : "");
  if (!req.dump_logits.empty()) {
    write_logits(req.dump_logits, r.logits, r.batch, r.steps - 1, req.model);
    std::printf("logits: f32 [%lld, %lld] -> %s (+ .json)\n", static_cast<long long>(r.batch),
                static_cast<long long>(r.logits.size()) / r.batch, req.dump_logits.c_str());
  }
  if (o.trace) write_gpu_trace(req.trace, c, req, g, r);
  return 0;
}

}  // namespace
}  // namespace mpk

MPK_RUN_BACKEND(gpu, "the CUDA megakernel: all decode steps in one persistent launch",
                mpk::run_gpu_backend, mpk::gpu_available);
