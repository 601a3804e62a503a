// `mpk experiment`: batch runs over models x pass-option combinations x scheduling
// policies, in the simulator or on the GPU. Every run goes into one trace.db; one
// comparison table (makespan per step, utilization, idle share, critical path) is
// printed at the end, with a progress bar on stderr while it runs, and the runs are
// written as CSV, JSON and an SVG plot (traces/result_files.h).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>

#include "driver/compile.h"
#include "driver/executor.h"
#include "driver/record.h"
#include "ir/error.h"
#include "passes/pipeline.h"
#include "passes/policies/policy.h"
#include "tools/args.h"
#include "tools/subcommands.h"
#include "traces/analysis.h"
#include "traces/result_files.h"
#include "traces/text_table.h"
#include "traces/trace_db.h"

namespace mpk {
namespace {

constexpr const char* kUsage =
    "usage: mpk experiment --model PRESET|HF_DIR[,...] [--policies P1,P2,...]\n"
    "                      [--backend sim|gpu] [--steps N] [--batch N] [--max-seq N]\n"
    "                      [--set PASS.OPTION=V1,V2,...]... [--costs COSTS.json] [-o TRACE.db]\n"
    "                      [--report PREFIX]\n\n"
    "Runs every model x --set combination x policy (default: all policies) and stores each\n"
    "run in TRACE.db (default trace.db). --set gives a pass option several values, e.g.\n"
    "--set decompose.tile=32,64,128; every combination of the --set options is one run per\n"
    "policy. --costs: a cost file (e.g. from mpk calibrate) that assign-sm schedules with\n"
    "and the sim backend simulates with. Prints one table:\n"
    "makespan per step, SM utilization, bubble share (idle SM time), and the critical path\n"
    "of the median step: task time on it (crit busy) and waiting on it (crit wait).\n"
    "Writes PREFIX.csv, PREFIX.json and PREFIX.svg (makespan per step of every run; default\n"
    "PREFIX: TRACE.db without its extension).\n";

struct Axis {
  std::string pass, option;
  std::vector<std::string> values;
};

Axis parse_axis(const std::string& s) {
  const size_t dot = s.find('.'), eq = s.find('=');
  if (dot == std::string::npos || eq == std::string::npos || dot > eq || dot == 0 ||
      eq == dot + 1 || eq + 1 == s.size())
    throw Error("option '--set' expects PASS.OPTION=V1,V2,..., got '" + s + "'");
  Axis a{s.substr(0, dot), s.substr(dot + 1, eq - dot - 1), split(s.substr(eq + 1), ',')};
  for (const std::string& v : a.values)
    if (v.empty()) throw Error("option '--set " + s + "': empty value");
  return a;
}

// Every combination of the axes' values: one list of value indices each.
std::vector<std::vector<size_t>> combinations(const std::vector<Axis>& axes) {
  std::vector<std::vector<size_t>> out = {{}};
  for (const Axis& a : axes) {
    std::vector<std::vector<size_t>> next;
    for (const auto& c : out)
      for (size_t i = 0; i < a.values.size(); ++i) {
        next.push_back(c);
        next.back().push_back(i);
      }
    out = std::move(next);
  }
  return out;
}

std::string pipeline_for(const std::string& policy, const std::vector<Axis>& axes,
                         const std::vector<size_t>& combo, const std::string& costs) {
  Pipeline p = parse_pipeline(default_pipeline_with(policy, "decompose", costs));
  for (size_t i = 0; i < axes.size(); ++i) {
    auto it = std::find_if(p.begin(), p.end(),
                           [&](const PipelineEntry& e) { return e.pass == axes[i].pass; });
    if (it == p.end())
      throw Error("option '--set': no pass '" + axes[i].pass + "' in " + print_pipeline(p));
    if (axes[i].pass == "assign-sm" && axes[i].option == "policy")
      throw Error("option '--set': give policies with --policies");
    it->options[axes[i].option] = axes[i].values[combo[i]];
  }
  return print_pipeline(p);
}

std::string combo_label(const std::vector<Axis>& axes, const std::vector<size_t>& combo) {
  std::string s;
  for (size_t i = 0; i < axes.size(); ++i)
    s += (s.empty() ? "" : " ") + axes[i].pass + "." + axes[i].option + "=" + axes[i].values[combo[i]];
  return s;
}

class Progress {
 public:
  explicit Progress(size_t total) : total_(total), tty_(::isatty(2)) {}
  void show(size_t done, const std::string& what) {
    const int width = 24;
    const int filled = static_cast<int>(width * done / std::max<size_t>(total_, 1));
    std::string bar(static_cast<size_t>(filled), '#');
    bar += std::string(static_cast<size_t>(width - filled), '.');
    std::fprintf(stderr, "%s[%s] %zu/%zu  %-60.60s%s", tty_ ? "\r" : "", bar.c_str(), done, total_,
                 what.c_str(), tty_ ? "" : "\n");
    std::fflush(stderr);
  }
  void finish() {
    if (tty_) std::fputc('\n', stderr);
  }

 private:
  size_t total_;
  bool tty_;
};

struct Row {
  std::string model, policy, sets, pipeline;
  int64_t run = 0;
  RunStats stats;
};

// The runs as result rows: simulated runs' makespans are predictions, GPU runs' measured.
std::vector<ResultRow> result_rows(const std::vector<Row>& rows, bool measured) {
  std::vector<ResultRow> out;
  for (const Row& r : rows) {
    ResultRow x;
    x.label = std::to_string(r.run);
    x.group = r.model;
    x.name = r.policy;
    x.options = r.sets;
    x.pipeline = r.pipeline;
    (measured ? x.measured_ns : x.predicted_ns) = r.stats.mean_step_ns;
    x.run = r.run;
    out.push_back(x);
  }
  return out;
}

// PREFIX for the result files: --report, else the trace.db path without its extension.
std::string report_prefix(const Args& args, const std::string& trace) {
  if (args.has("report")) return args.get("report");
  const size_t dot = trace.rfind('.'), slash = trace.rfind('/');
  return dot != std::string::npos && (slash == std::string::npos || dot > slash) ? trace.substr(0, dot) : trace;
}

// The comparison table: one line per run, "vs best" against the fastest run of its model.
TextTable comparison_table(const std::vector<Row>& rows, bool show_sets) {
  std::map<std::string, double> best;  // per model
  for (const Row& r : rows) {
    auto it = best.find(r.model);
    if (it == best.end() || r.stats.mean_step_ns < it->second) best[r.model] = r.stats.mean_step_ns;
  }
  std::vector<std::string> header = {"run", "model", "policy"};
  if (show_sets) header.push_back("options");
  for (const char* h : {"ms/step", "vs best", "util", "bubbles", "crit busy", "crit wait"})
    header.push_back(h);
  TextTable t(header);
  for (const Row& r : rows) {
    const RunStats& s = r.stats;
    const double cap = static_cast<double>(s.run.num_workers) * static_cast<double>(s.run.duration_ns);
    double idle = 0;
    for (int64_t v : s.bubble_ns) idle += static_cast<double>(v);
    std::vector<std::string> cells = {std::to_string(r.run), r.model, r.policy};
    if (show_sets) cells.push_back(r.sets);
    const double b = best[r.model];
    cells.push_back(strf("%.3f", s.mean_step_ns * 1e-6));
    cells.push_back(b > 0 ? strf("%+.1f %%", 100.0 * (s.mean_step_ns - b) / b) : "-");
    cells.push_back(strf("%.1f %%", 100.0 * s.utilization));
    cells.push_back(cap > 0 ? strf("%.1f %%", 100.0 * idle / cap) : "-");
    cells.push_back(format_ns(static_cast<double>(s.path_busy_ns)));
    cells.push_back(format_ns(static_cast<double>(s.path_gap_ns)));
    t.add(cells);
  }
  return t;
}

int cmd_experiment(int argc, char** argv) {
  const Args args(argc, argv,
                  {"model", "policies", "backend", "steps", "batch", "max-seq", "costs", "o",
                   "output", "report"},
                  {"help", "h"}, {"set"});
  if (args.flag("help") || args.flag("h")) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (!args.positionals().empty())
    throw Error("unexpected argument '" + args.positionals()[0] + "' (see --help)");
  if (!args.has("model")) throw Error("missing --model PRESET|HF_DIR (see --help)");
  const std::vector<std::string> models = split(args.get("model"), ',');
  std::vector<std::string> policies;
  if (args.has("policies")) {
    policies = split(args.get("policies"), ',');
  } else {
    for (const PolicyInfo& p : all_policies()) policies.push_back(p.name);
  }
  for (const std::string& p : policies)
    if (!find_policy(p))
      throw Error("unknown policy '" + p + "' (known: " + known_policies() + ")");
  const std::string backend_name = args.get("backend", "sim");
  if (backend_name != "sim") {
    if (backend_name != "gpu")
      throw Error("option '--backend' expects sim or gpu, got '" + backend_name + "'");
    if (!find_executor(backend_name))
      throw Error("the gpu backend is not part of this build (built without CUDA)");
    usable_executor(backend_name);
  }
  CompileRequest base;
  ExecRequest exec;
  exec.steps = args.get_int("steps", exec.steps, kStepsRange);
  exec.record = true;
  base.batch = args.get_int("batch", base.batch, kBatchRange);
  base.max_seq_len = args.get_int("max-seq", base.max_seq_len, kMaxSeqRange);
  const std::string out = args.get("o", args.get("output", "trace.db"));
  ExecutorOptions options;
  options.costs = args.get("costs");
  std::vector<Axis> axes;
  for (const std::string& s : args.get_all("set")) axes.push_back(parse_axis(s));
  const auto combos = combinations(axes);
  // Check every pipeline (pass names, options, values) before the first run.
  for (const auto& combo : combos)
    for (const std::string& p : policies) PassPipeline check(pipeline_for(p, axes, combo, options.costs));
  { const TraceWriter check(out); }  // fail early on a file that is not a trace.db

  const size_t total = models.size() * combos.size() * policies.size();
  Progress progress(total);
  std::vector<Row> rows;
  const auto t0 = std::chrono::steady_clock::now();
  for (const std::string& model : models) {
    CompileRequest req = base;
    req.model = model;
    const Module imported = import_source(req);
    for (const auto& combo : combos) {
      const std::string sets = combo_label(axes, combo);
      for (const std::string& policy : policies) {
        progress.show(rows.size(), model + " " + policy + (sets.empty() ? "" : " " + sets));
        Row row{model, policy, sets, pipeline_for(policy, axes, combo, options.costs), 0, {}};
        try {
          Module m = imported;
          run_pipeline(m, row.pipeline);
          check_steps_fit(m, exec.steps);
          const std::unique_ptr<Executor> ex = make_executor(backend_name, m, options);
          StoredRun stored;
          row.run = record_run(out, m, *ex, ex->run(exec), {model, sets, ""}, &stored);
          row.stats = compute_stats(m, stored);
        } catch (const Error& e) {
          progress.finish();
          throw Error(model + ", " + policy + (sets.empty() ? "" : ", " + sets) + ": " + e.what());
        }
        rows.push_back(std::move(row));
      }
    }
  }
  progress.show(rows.size(), strf("done in %.1f s", std::chrono::duration<double>(
                                                        std::chrono::steady_clock::now() - t0).count()));
  progress.finish();

  std::printf("%s, %lld steps, batch %lld -> %s\n\n", backend_name.c_str(),
              static_cast<long long>(exec.steps), static_cast<long long>(base.batch), out.c_str());
  std::fputs(comparison_table(rows, !axes.empty()).str(0).c_str(), stdout);
  const std::vector<std::string> files =
      write_result_files(report_prefix(args, out), "mpk experiment: makespan per step (" + backend_name + ")",
                         result_rows(rows, backend_name == "gpu"));
  std::printf("\nruns -> %s, %s, %s\n", files[0].c_str(), files[1].c_str(), files[2].c_str());
  std::printf("\ncompare two runs: mpk trace diff %s --run A --run B   (studio: mpk-studio %s)\n",
              out.c_str(), out.c_str());
  return 0;
}

}  // namespace
}  // namespace mpk

MPK_SUBCOMMAND(experiment, "run policies x models x pass options; compare in one table",
               mpk::cmd_experiment);
