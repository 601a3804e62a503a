// `mpk tune --model M`: searches decompositions, fusions, the policy and its options with
// the calibrated simulator as the surrogate (driver/tune_search.h), prints the best against
// the default, writes the best schedule as .mpk, the default and the finalists as runs in
// trace.db (every candidate with --trace-all), every candidate as CSV, JSON and an SVG plot,
// and with --gpu measures the best finalists and the default on the GPU. docs/tune.md.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "driver/compile.h"
#include "driver/executor.h"
#include "driver/record.h"
#include "driver/tune_search.h"
#include "ir/error.h"
#include "ir/serialize.h"
#include "passes/policies/policy.h"
#include "tools/args.h"
#include "tools/subcommands.h"
#include "traces/analysis.h"
#include "traces/calibrate.h"
#include "traces/result_files.h"
#include "traces/shipped_costs.h"
#include "traces/text_table.h"

namespace mpk {
namespace {

constexpr const char* kUsage =
    "usage: mpk tune --model PRESET|HF_DIR [--budget TIME|N] [--gpu] [-o BEST.mpk]\n"
    "                [--costs COSTS.json] [--steps N] [--search-steps N] [--finalists K]\n"
    "                [--gpu-top K] [--seed S] [--batch N] [--max-seq N] [--trace TUNE.db]\n"
    "                [--trace-all] [--report PREFIX]\n\n"
    "Searches the options the passes and policies declare (decompose's tiles, attention\n"
    "splits and heads, cooperative linears; each fusion on or off; infer-deps' pruning; the\n"
    "policy and its options) for the fastest schedule in the simulator: Bayesian optimisation\n"
    "(a tree-structured Parzen estimator) with local moves, each candidate simulated for\n"
    "--search-steps (default 4); then the best --finalists (default 6) and the default are\n"
    "compiled, verified, checked by the megakernel generator and simulated for --steps\n"
    "(default 16). --budget: a time (90s, 10m, 1h; default 10m) or a number of candidates.\n"
    "--costs: the cost file the simulator and assign-sm use (default: the machine's shipped\n"
    "calibration, else its machine model, for simulating; the machine model for planning).\n"
    "Writes the best schedule to -o (default best.mpk), the default and the finalists as runs\n"
    "in --trace (default tune.db; every candidate with --trace-all), and every candidate to\n"
    "PREFIX.csv, .json and .svg (default PREFIX: tune). --gpu: measures the default and the\n"
    "best --gpu-top (default 3) finalists on the GPU, one run each, and prints predicted\n"
    "against measured.\n";

// "90s", "10m", "1h" -> seconds; a bare integer -> candidates.
void parse_budget(const std::string& s, TuneSettings& out) {
  if (s.empty()) throw Error("option '--budget' is empty");
  const char unit = s.back();
  const double scale = unit == 's' ? 1 : unit == 'm' ? 60 : unit == 'h' ? 3600 : 0;
  const std::string digits = scale > 0 ? s.substr(0, s.size() - 1) : s;
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 7)
    throw Error("option '--budget' expects a time (90s, 10m, 1h) or a number of candidates, got '" + s + "'");
  const int64_t v = std::stoll(digits);
  if (v <= 0) throw Error("option '--budget' must be positive, got '" + s + "'");
  if (scale > 0) out.max_seconds = static_cast<double>(v) * scale;
  else out.max_candidates = v;
}

// The progress line on stderr: a bar over the budget, the best so far, the latest.
class Progress {
 public:
  explicit Progress(const TuneSettings& s) : s_(s), tty_(::isatty(2)) {}
  void show(const TuneResult& r, const std::string& phase, double seconds) {
    // Not a terminal (a log): every tenth candidate and each finalist.
    if (!tty_ && phase == "search" && r.candidates.size() % 10 != 1) return;
    const TuneCandidate& last = r.candidates.back();
    double best = r.candidates[0].step_ns;
    for (const TuneCandidate& c : r.candidates) best = std::min(best, c.step_ns);
    const double done = s_.max_candidates > 0 ? static_cast<double>(r.candidates.size()) / s_.max_candidates
                                              : seconds / std::max(s_.max_seconds, 1e-9);
    const int filled = static_cast<int>(20 * std::clamp(done, 0.0, 1.0));
    const double def = r.candidates[0].step_ns;
    std::fprintf(stderr, "%s[%s%s] %s %zu, %.0f s  best %s (%+.1f %%)  %-50.50s%s", tty_ ? "\r" : "",
                 std::string(static_cast<size_t>(filled), '#').c_str(),
                 std::string(static_cast<size_t>(20 - filled), '.').c_str(), phase.c_str(), r.candidates.size(),
                 seconds, format_ns(best).c_str(), 100 * (best - def) / def,
                 (last.error.empty() ? last.options : "failed: " + last.options).c_str(), tty_ ? "" : "\n");
    std::fflush(stderr);
  }
  void finish() {
    if (tty_) std::fputc('\n', stderr);
  }

 private:
  const TuneSettings& s_;
  bool tty_;
};

struct Measured {
  size_t candidate;
  double step_ns;
  int64_t run;
};

// The default and the best `top` finalists on the GPU, one run each, recorded.
std::vector<Measured> measure_on_gpu(TuneCompiler& compiler, const TuneResult& r, int64_t top, int32_t steps,
                                     const std::string& trace, const std::string& model) {
  std::vector<size_t> picks;
  for (size_t i = 0; i < r.candidates.size(); ++i)
    if (r.candidates[i].final_step_ns >= 0) picks.push_back(i);
  std::sort(picks.begin(), picks.end(), [&](size_t a, size_t b) {
    return r.candidates[a].final_step_ns < r.candidates[b].final_step_ns;
  });
  if (picks.size() > static_cast<size_t>(top)) picks.resize(static_cast<size_t>(top));
  if (std::find(picks.begin(), picks.end(), size_t{0}) == picks.end()) picks.push_back(0);
  std::vector<Measured> out;
  for (size_t i : picks) {
    const TuneCandidate& c = r.candidates[i];
    std::fprintf(stderr, "gpu: candidate %zu (%s)\n", i, c.options.c_str());
    const Module m = compiler.verified(parse_pipeline(c.pipeline));
    const std::unique_ptr<Executor> ex = make_executor("gpu", m, ExecutorOptions{});
    ExecRequest req;
    req.steps = steps;
    req.record = true;
    const ExecResult x = ex->run(req);
    const int64_t run = record_run(trace, m, *ex, x, {model, "tune " + c.options, "tune candidate " + std::to_string(i)});
    out.push_back({i, mean_step_ns(x.executions, static_cast<int32_t>(steps)), run});
  }
  return out;
}

// Simulated runs of the given candidates into trace.db; returns their run ids.
std::vector<int64_t> record_candidates(TuneCompiler& compiler, const TuneResult& r, const std::vector<size_t>& which,
                                       int32_t steps, const std::string& costs, const std::string& trace,
                                       const std::string& model) {
  std::vector<int64_t> runs(r.candidates.size(), 0);
  TraceWriter writer(trace);
  for (size_t i : which) {
    const TuneCandidate& c = r.candidates[i];
    if (!c.error.empty()) continue;
    const Module m = compiler.schedule(parse_pipeline(c.pipeline));
    ExecutorOptions o;
    o.costs = costs;
    const std::unique_ptr<Executor> ex = make_executor("sim", m, o);
    ExecRequest req;
    req.steps = steps;
    const std::string note = "tune candidate " + std::to_string(i) +
                             (i == 0 ? " (default)" : i == r.best ? " (best)" : c.finalist ? " (finalist)" : "");
    const ExecResult x = ex->run(req);
    runs[i] = writer.write_run(m, run_record(*ex, x, {model, "tune " + c.options, note}), x.executions);
  }
  return runs;
}

std::vector<ResultRow> result_rows(const TuneResult& r, const std::vector<int64_t>& runs,
                                   const std::vector<Measured>& gpu, const std::string& model) {
  std::vector<ResultRow> rows;
  for (size_t i = 0; i < r.candidates.size(); ++i) {
    const TuneCandidate& c = r.candidates[i];
    ResultRow x;
    x.label = std::to_string(i);
    x.group = model;
    const auto p = parse_pipeline(c.pipeline);
    for (const PipelineEntry& e : p)
      if (e.pass == "assign-sm") x.name = e.options.count("policy") ? e.options.at("policy") : kDefaultPolicy;
    x.options = c.options;
    x.pipeline = c.pipeline;
    x.predicted_ns = c.final_step_ns >= 0 ? c.final_step_ns : std::isfinite(c.step_ns) ? c.step_ns : -1;
    for (const Measured& g : gpu)
      if (g.candidate == i) x.measured_ns = g.step_ns, x.run = g.run;
    if (!x.run && i < runs.size()) x.run = runs[i];
    x.note = i == 0 ? "default" : i == r.best ? "best" : c.finalist ? "finalist" : c.how;
    if (!c.error.empty()) x.note += ": " + c.error;
    rows.push_back(x);
  }
  return rows;
}

void print_table(const TuneResult& r, const std::vector<Measured>& gpu) {
  std::vector<size_t> order;
  for (size_t i = 0; i < r.candidates.size(); ++i)
    if (std::isfinite(r.candidates[i].step_ns)) order.push_back(i);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const TuneCandidate &x = r.candidates[a], &y = r.candidates[b];
    const double ka = x.final_step_ns >= 0 ? x.final_step_ns : 1e300, kb = y.final_step_ns >= 0 ? y.final_step_ns : 1e300;
    return ka != kb ? ka < kb : x.step_ns < y.step_ns;
  });
  if (order.size() > 12) order.resize(12);
  if (std::find(order.begin(), order.end(), size_t{0}) == order.end()) order.push_back(0);
  const double def = r.candidates[0].final_step_ns;
  TextTable t({"cand", "found by", "search/step", "final/step", "vs default", "gpu/step", "options"});
  for (size_t i : order) {
    const TuneCandidate& c = r.candidates[i];
    std::string measured = "-";
    for (const Measured& g : gpu)
      if (g.candidate == i) measured = format_ns(g.step_ns);
    t.add({std::to_string(i) + (i == r.best ? " *" : ""), c.how, format_ns(c.step_ns),
           c.final_step_ns >= 0 ? format_ns(c.final_step_ns) : c.finalist ? "failed" : "-",
           c.final_step_ns >= 0 ? strf("%+.1f %%", 100 * (c.final_step_ns - def) / def) : "-", measured,
           c.options});
  }
  std::fputs(t.str(0).c_str(), stdout);
}

int cmd_tune(int argc, char** argv) {
  const Args args(argc, argv,
                  {"model", "budget", "o", "output", "costs", "steps", "search-steps", "finalists", "gpu-top",
                   "seed", "batch", "max-seq", "trace", "report"},
                  {"help", "h", "gpu", "trace-all"});
  if (args.flag("help") || args.flag("h")) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (!args.positionals().empty()) throw Error("unexpected argument '" + args.positionals()[0] + "' (see --help)");
  if (!args.has("model")) throw Error("missing --model PRESET|HF_DIR (see --help)");
  TuneSettings s;
  parse_budget(args.get("budget", "10m"), s);
  s.final_steps = static_cast<int32_t>(args.get_int("steps", s.final_steps, kStepsRange));
  s.search_steps = static_cast<int32_t>(args.get_int("search-steps", s.search_steps, kStepsRange));
  s.finalists = static_cast<int32_t>(args.get_int("finalists", s.finalists, {1, 100}));
  s.seed = args.get_u64("seed", s.seed);
  const int64_t gpu_top = args.get_int("gpu-top", 3, {1, 100});
  const std::string costs = args.get("costs"), trace = args.get("trace", "tune.db");
  const std::string out = args.get("o", args.get("output", "best.mpk"));
  if (args.flag("gpu")) usable_executor("gpu");  // fail now, not after the search
  { const TraceWriter check(trace); }           // a file that is not a trace.db fails now

  CompileRequest req;
  req.model = args.get("model");
  req.batch = args.get_int("batch", req.batch, kBatchRange);
  req.max_seq_len = args.get_int("max-seq", req.max_seq_len, kMaxSeqRange);
  TuneCompiler compiler(import_source(req));
  check_steps_fit(compiler.imported(), std::max(s.final_steps, s.search_steps));
  std::string used;
  s.costs = simulation_costs(compiler.imported().machine, costs, &used);
  const auto t_space = std::chrono::steady_clock::now();
  const TuneSpace space =
      build_tune_space(compiler, parse_pipeline(default_pipeline_with(kDefaultPolicy, "decompose", costs)));
  std::printf("model     %s, %zu searched options (%lld tasks by default; values tried in %.1f s)\n",
              req.model.c_str(), space.dims.size(), static_cast<long long>(space.default_tasks),
              seconds_since(t_space));
  for (const TuneDimension& d : space.dims) std::printf("  %-34s %zu values\n", d.name().c_str(), d.values.size());
  for (const std::string& n : space.notes) std::printf("  (%s)\n", n.c_str());
  std::printf("surrogate %s, costs: %s; %d steps per candidate, %d for the finalists\n\n",
              compiler.imported().machine.name.c_str(), used.c_str(), s.search_steps, s.final_steps);

  Progress progress(s);
  const auto t0 = std::chrono::steady_clock::now();
  const TuneResult r = run_tune(space, compiler, s, [&](const TuneResult& so_far, const std::string& phase) {
    progress.show(so_far, phase, seconds_since(t0));
  });
  progress.finish();

  std::vector<size_t> recorded;
  for (size_t i = 0; i < r.candidates.size(); ++i)
    if (args.flag("trace-all") || r.candidates[i].finalist) recorded.push_back(i);
  const std::vector<int64_t> runs = record_candidates(compiler, r, recorded, s.final_steps, costs, trace, req.model);
  std::vector<Measured> gpu;
  if (args.flag("gpu")) gpu = measure_on_gpu(compiler, r, gpu_top, s.final_steps, trace, req.model);

  std::printf("\n%zu candidates in %.0f s\n", r.candidates.size(), r.seconds);
  print_table(r, gpu);
  const TuneCandidate& best = r.candidates[r.best];
  const double def = r.candidates[0].final_step_ns, gain = (def - best.final_step_ns) / def;
  std::printf("\nbest: candidate %zu, %s per step against the default's %s (%+.1f %%)%s\n", r.best,
              format_ns(best.final_step_ns).c_str(), format_ns(def).c_str(), -100 * gain,
              gain < 0.01 ? ": the default is within 1 % of the best found" : "");
  std::printf("  %s\n", best.pipeline.c_str());
  save_module(compiler.verified(parse_pipeline(best.pipeline)), out, Format::kBinary);
  const std::vector<std::string> files =
      write_result_files(args.get("report", "tune"), "mpk tune " + req.model + ": makespan per step per candidate",
                         result_rows(r, runs, gpu, req.model));
  std::printf("\nbest schedule -> %s   (run it: mpk run --graph %s)\n", out.c_str(), out.c_str());
  std::printf("runs -> %s: default run %lld, best run %lld   (compare: mpk-studio %s)\n", trace.c_str(),
              static_cast<long long>(runs[0]), static_cast<long long>(runs[r.best]), trace.c_str());
  std::printf("candidates -> %s, %s, %s\n", files[0].c_str(), files[1].c_str(), files[2].c_str());
  return 0;
}

}  // namespace
}  // namespace mpk

MPK_SUBCOMMAND(tune, "search decompositions, fusions and placements with the simulator",
               mpk::cmd_tune);
