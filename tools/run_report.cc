// `mpk run`'s output (tools/run_report.h).
#include "tools/run_report.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "ir/error.h"
#include "ir/file_io.h"
#include "traces/analysis.h"
#include "traces/trace_db.h"

namespace mpk {
namespace {

// The cpu table: token(s), top logit and milliseconds per step.
void print_cpu_steps(const ExecResult& r) {
  std::printf("%5s  %7s  %12s  %10s\n", "step", "token", "top logit", "ms");
  for (int64_t s = r.first_step; s < r.steps; ++s) {
    std::string toks;
    for (int32_t t : r.tokens[s]) toks += (toks.empty() ? "" : ",") + std::to_string(t);
    std::printf("%5lld  %7s  %12.5f  %10.3f\n", static_cast<long long>(s), toks.c_str(),
                r.top_logits[s][0], r.step_seconds[s] * 1e3);
  }
}

}  // namespace

void print_run_header(std::FILE* out, const Compiled& c, const Executor& ex, int64_t batch, int64_t max_seq_len,
                      bool executor_line) {
  const Module& m = c.module;
  std::fprintf(out, "model    %s (%s), batch %lld, max_seq_len %lld\n", m.name.c_str(),
               m.provenance.source.c_str(), static_cast<long long>(batch), static_cast<long long>(max_seq_len));
  std::fprintf(out, "graph    %s | %zu tasks, %zu events, %zu workers, policy %s\n",
               c.pipeline.empty() ? "(scheduled module)" : c.pipeline.c_str(), m.graph.tasks.size(),
               m.graph.events.size(), m.graph.schedule.workers.size(), m.graph.schedule.policy.c_str());
  std::fprintf(out, "weights  %s\n", ex.weights_note().c_str());
  if (executor_line) std::fprintf(out, "%-9s%s\n", ex.kind(), ex.describe().c_str());
}

void print_decode(const Executor& ex, const ExecResult& r, size_t prompt_length, bool traced) {
  const bool cpu = !r.top_logits.empty();
  if (r.prefill)
    std::printf("prefill  positions 0..%lld in %lld chunk steps: %.3f ms\n\n", static_cast<long long>(r.first_step - 1),
                static_cast<long long>(r.prefill->steps), r.prefill->seconds * 1e3);
  if (cpu) {
    print_cpu_steps(r);
  } else {
    std::printf("%5s  %s\n", "step", "token");
    for (int64_t s = r.first_step; s < r.steps; ++s)
      std::printf("%5lld  %s\n", static_cast<long long>(s), join_tokens(r.tokens[s]).c_str());
  }
  std::printf("\n");
  for (int64_t b = 0; b < r.batch; ++b) {
    std::vector<int32_t> generated;  // the argmax of steps P-1, P, ... (docs/ir.md)
    for (size_t s = prompt_length - 1; s < r.tokens.size(); ++s) generated.push_back(r.tokens[s][b]);
    const std::string row = r.batch > 1 ? " [row " + std::to_string(b) + "]" : "";
    std::printf("generated%s: %s\n", row.c_str(), join_tokens(generated).c_str());
  }
  const int64_t decoded = r.steps - r.first_step;
  if (decoded <= 0) return;
  if (cpu) {
    std::vector<double> sorted(r.step_seconds.begin() + r.first_step, r.step_seconds.end());
    std::sort(sorted.begin(), sorted.end());
    double total = 0;
    for (double s : sorted) total += s;
    std::printf("time per step: %.3f ms mean, %.3f ms median (%lld steps, %.3f s run)\n",
                total / static_cast<double>(decoded) * 1e3, sorted[sorted.size() / 2] * 1e3,
                static_cast<long long>(decoded), r.seconds);
  } else {
    std::printf("time per token: %.4f ms (one launch of %lld steps: %.3f ms%s)\n",
                r.seconds * 1e3 / static_cast<double>(decoded), static_cast<long long>(decoded),
                r.seconds * 1e3, traced ? ", tracing on" : "");
  }
}

void print_sim_report(const Compiled& c, const Executor& ex, const ExecResult& r,
                      const std::string& trace, const StoredRun& stored, double write_s) {
  const int64_t run = stored.run.id;
  const Module& m = c.module;
  std::printf("model     %s (%s), batch %lld\n", m.name.c_str(), m.provenance.source.c_str(),
              static_cast<long long>(attr_int_or(m.attrs, "batch", 1)));
  std::printf("graph     %s | %zu tasks, %zu events, %zu workers\n",
              c.pipeline.empty() ? "(scheduled module)" : c.pipeline.c_str(), m.graph.tasks.size(),
              m.graph.events.size(), m.graph.schedule.workers.size());
  std::printf("machine   %s\n", ex.describe().c_str());
  std::printf("simulate  %lld steps: compile %.2f s (verified meanwhile), simulate %.2f s, write %.2f s\n",
              static_cast<long long>(r.steps - r.first_step), c.compile_s, r.seconds, write_s);
  if (r.prefill)
    std::printf("prefill   positions 0..%lld in %lld chunk steps before them: run %lld\n",
                static_cast<long long>(r.first_step - 1), static_cast<long long>(r.prefill->steps),
                static_cast<long long>(run - 1));
  std::printf("\n");
  std::fputs(format_brief(compute_stats(m, stored)).c_str(), stdout);
  std::printf("\ntrace: run %lld -> %s\n", static_cast<long long>(run), trace.c_str());
  std::printf("open it: mpk-studio %s   (or: mpk trace stats %s --run %lld)\n", trace.c_str(),
              trace.c_str(), static_cast<long long>(run));
}

std::string join_tokens(const std::vector<int32_t>& tokens) {
  std::string s;
  for (int32_t t : tokens) s += (s.empty() ? "" : " ") + std::to_string(t);
  return s;
}

void write_logits(const std::string& path, const std::vector<float>& logits, int64_t batch,
                  int64_t step, const std::string& model) {
  namespace fs = std::filesystem;
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

}  // namespace mpk
