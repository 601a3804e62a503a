// The `cpu` backend of `mpk run`: compiles the model, runs the scheduled task graph on
// the CPU executor (runtime/cpu/executor.h) and prints the generated tokens, one line
// per step (token, top logit, time) and the time per step; optionally dumps the last
// logits and writes the run to a trace.db.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "ir/error.h"
#include "runtime/cpu/executor.h"
#include "tools/run_backends.h"
#include "tools/run_compile.h"
#include "traces/trace_db.h"

namespace mpk {
namespace {

void write_trace(const std::string& path, const CompiledRun& c, const RunRequest& req,
                 const CpuExecResult& r) {
  std::vector<Execution> execs;
  execs.reserve(r.task_records.size());
  for (const CpuTaskRecord& t : r.task_records)
    execs.push_back({t.task, static_cast<int32_t>(t.step), t.worker, t.thread, t.wait_ns, t.start_ns, t.end_ns});
  RunInfo info;
  info.kind = "cpu";
  info.model = req.model;
  info.options = "order=schedule threads=" + std::to_string(r.threads) + " weights=" + c.weights_note;
  info.batch = r.batch;
  info.steps = r.steps;
  info.device.name = "host CPU (" + std::to_string(r.threads) + " threads)";
  info.device.sm_count = static_cast<int32_t>(c.module.graph.schedule.workers.size());
  const int64_t id = write_run(path, c.module, info, execs);
  std::printf("trace: run %lld -> %s\n", static_cast<long long>(id), path.c_str());
}

int run_cpu_backend(const RunRequest& req) {
  if (req.order == "random" && !req.trace.empty())
    throw Error("--trace records schedule-order runs; random order has no workers");
  const CompiledRun c = compile_for_run(req);
  const Module& m = c.module;
  CpuRunOptions o;
  o.steps = req.steps;
  o.prompt = req.prompt;
  o.order = *parse_cpu_order(req.order);
  o.seed = req.seed;
  o.threads = req.threads;
  o.watchdog_s = req.watchdog_s;
  o.record_tasks = !req.trace.empty();
  const CpuExecResult r = run_cpu(m, c.weights, o);

  std::printf("model    %s (%s), batch %lld, max_seq_len %lld\n", m.name.c_str(),
              m.provenance.source.c_str(), static_cast<long long>(r.batch),
              static_cast<long long>(attr_int_or(m.attrs, "max_seq_len", 0)));
  std::printf("graph    %s | %zu tasks, %zu events, %zu workers, policy %s\n",
              c.pipeline.empty() ? "(scheduled module)" : c.pipeline.c_str(), m.graph.tasks.size(),
              m.graph.events.size(), m.graph.schedule.workers.size(), m.graph.schedule.policy.c_str());
  std::printf("weights  %s\n", c.weights_note.c_str());
  if (o.order == CpuOrder::kRandom)
    std::printf("cpu      random order (seed %llu), 1 thread\n", static_cast<unsigned long long>(req.seed));
  else
    std::printf("cpu      schedule order, %lld threads\n", static_cast<long long>(r.threads));
  std::printf("prepare  compile %.3f s, weights %.3f s\n\n", c.compile_s, c.weights_s);

  std::printf("%5s  %7s  %12s  %10s\n", "step", "token", "top logit", "ms");
  for (int64_t s = 0; s < r.steps; ++s) {
    std::string toks;
    for (int32_t t : r.tokens[s]) toks += (toks.empty() ? "" : ",") + std::to_string(t);
    std::printf("%5lld  %7s  %12.5f  %10.3f\n", static_cast<long long>(s), toks.c_str(),
                r.top_logits[s][0], r.step_seconds[s] * 1e3);
  }
  std::printf("\n");
  for (int64_t b = 0; b < r.batch; ++b) {
    const std::string row = r.batch > 1 ? " [row " + std::to_string(b) + "]" : "";
    std::printf("generated%s: %s\n", row.c_str(), join_tokens(generated_tokens(r, req.prompt.size(), b)).c_str());
  }
  std::vector<double> sorted = r.step_seconds;
  std::sort(sorted.begin(), sorted.end());
  double last = 0;
  for (double s : r.step_seconds) last += s;
  std::printf("time per step: %.3f ms mean, %.3f ms median (%lld steps, %.3f s run)\n",
              last / static_cast<double>(r.steps) * 1e3, sorted[sorted.size() / 2] * 1e3,
              static_cast<long long>(r.steps), r.total_seconds);
  if (!req.dump_logits.empty()) {
    write_logits(req.dump_logits, r.logits, r.batch, r.steps - 1, req.model);
    std::printf("logits: f32 [%lld, %lld] -> %s (+ .json)\n", static_cast<long long>(r.logits_shape[0]),
                static_cast<long long>(r.logits_shape[1]), req.dump_logits.c_str());
  }
  if (!req.trace.empty()) write_trace(req.trace, c, req, r);
  return 0;
}

}  // namespace
}  // namespace mpk

MPK_RUN_BACKEND(cpu, "numerics on the CPU: the executor that the GPU is checked against",
                mpk::run_cpu_backend, nullptr);
