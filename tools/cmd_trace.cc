// `mpk trace`: read a trace.db. `runs` lists its runs, `stats` reports one run
// (makespan per step, utilization, idle time by cause, longest waits, time per operator
// kind, critical path), `path` splits the critical path into segments per step or
// per decoder layer, `diff` sets two runs side by side, `export --chrome` writes
// Chrome trace event JSON for Perfetto.
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <string>
#include <tuple>
#include <utility>

#include "ir/error.h"
#include "ir/file_io.h"
#include "tools/args.h"
#include "tools/subcommands.h"
#include "traces/analysis.h"
#include "traces/chrome_export.h"
#include "traces/path_split.h"
#include "traces/text_table.h"
#include "traces/trace_db.h"

namespace mpk {
namespace {

constexpr const char* kUsage =
    "usage: mpk trace runs TRACE.db\n"
    "       mpk trace stats TRACE.db [--run N] [--step K] [--path]\n"
    "       mpk trace path TRACE.db [--run N] [--step S | --steps A:B] [--layers] [--top K]\n"
    "                       [--csv]\n"
    "       mpk trace diff TRACE.db --run A --run B\n"
    "       mpk trace export --chrome OUT.json TRACE.db [--run N] [--flows last|all|none]\n"
    "                        [--steps A:B]\n\n"
    "--run defaults to the newest run (diff: the two newest).\n"
    "stats: --step picks the step whose critical path is shown (default: the median\n"
    "step); --path lists every operator on it.\n"
    "path: the critical path of each step (default: all but the first) as segments, each\n"
    "execution and the dependency hop or same-SM gap before it, in microseconds. --layers:\n"
    "the mean per decoder layer over (step, layer) instances, then the path outside the\n"
    "layers. --top K keeps the K longest segments per table (default 20 per step, all\n"
    "with --layers; 0: all). --csv prints the same rows as CSV.\n"
    "export: flow arrows from the producer each task waited for last (last), from every\n"
    "producer (all), or none; --steps exports steps A..B only (big runs).\n";

std::string db_path(const Args& args) {
  if (args.positionals().size() != 1)
    throw Error(args.positionals().empty() ? "expected a trace.db path (see --help)"
                                           : "expected one trace.db path, got " +
                                                 std::to_string(args.positionals().size()));
  return args.positionals()[0];
}

int64_t run_id(const TraceReader& r, const Args& args) {
  return args.has("run") ? args.get_int("run", 0) : r.last_run();
}

// --steps A:B (or A) with 0 <= A <= B; the analyses check them against the run.
std::pair<int64_t, int64_t> step_range(const std::string& s) {
  const size_t colon = s.find(':');
  const auto a = parse_int_list(s.substr(0, colon), "--steps");
  const auto b = colon == std::string::npos ? a : parse_int_list(s.substr(colon + 1), "--steps");
  if (a.size() != 1 || b.size() != 1 || a[0] < 0 || b[0] < a[0])
    throw Error("option '--steps' expects A:B with 0 <= A <= B, got '" + s + "'");
  return {a[0], b[0]};
}

// --step K: a step >= 0 (checked against the run by the analysis); -1 when absent.
int64_t step_option(const Args& args) {
  if (!args.has("step")) return -1;
  const int64_t k = args.get_int("step", 0);
  if (k < 0) throw Error("option '--step' expects a step >= 0, got " + std::to_string(k));
  return k;
}

std::string when(int64_t ns) {
  const std::time_t t = static_cast<std::time_t>(ns / 1000000000);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M", &tm);
  return buf;
}

int trace_runs(int argc, char** argv) {
  const Args args(argc, argv, {}, {});
  const TraceReader r(db_path(args));
  TextTable t({"run", "rank", "kind", "model", "policy", "batch", "steps", "ms/step", "options", "started"});
  for (const RunRecord& run : r.runs())
    t.add({std::to_string(run.id), run.ranks > 1 ? strf("%d/%d", run.rank, run.ranks) : "", run.kind,
           run.model, run.policy, std::to_string(run.batch),
           std::to_string(run.steps),
           strf("%.3f", run.steps ? run.duration_ns * 1e-6 / static_cast<double>(run.steps) : 0.0),
           run.options, when(run.started_at_ns)});
  if (t.empty()) std::printf("%s: no runs\n", r.path().c_str());
  else std::fputs(t.str(0).c_str(), stdout);
  return 0;
}

int trace_stats(int argc, char** argv) {
  const Args args(argc, argv, {"run", "step"}, {"path"});
  const TraceReader r(db_path(args));
  const int64_t id = run_id(r, args);
  std::fputs(format_stats(compute_stats(r, id, step_option(args)), args.flag("path")).c_str(), stdout);
  return 0;
}

int trace_path(int argc, char** argv) {
  const Args args(argc, argv, {"run", "step", "steps", "top"}, {"layers", "csv"});
  PathSplitOptions options;
  options.layers = args.flag("layers");
  if (args.has("step") && args.has("steps")) throw Error("give --step or --steps, not both");
  if (args.has("step")) options.steps = {{step_option(args), step_option(args)}};
  if (args.has("steps")) options.steps = step_range(args.get("steps"));
  const int64_t top = args.get_int("top", options.layers ? 0 : 20);
  if (top < 0 || top > INT32_MAX)
    throw Error("option '--top' expects a count >= 0 (0: every segment), got " + std::to_string(top));
  const TraceReader r(db_path(args));
  const PathSplit split = compute_path_split(r, run_id(r, args), options);
  const int k = static_cast<int>(top);
  std::fputs((args.flag("csv") ? format_path_split_csv(split, k) : format_path_split(split, k)).c_str(),
             stdout);
  return 0;
}

int trace_diff(int argc, char** argv) {
  const Args args(argc, argv, {}, {}, {"run"});
  const TraceReader r(db_path(args));
  std::vector<int64_t> ids;
  for (const std::string& s : args.get_all("run")) {
    const auto v = parse_int_list(s, "--run");
    ids.insert(ids.end(), v.begin(), v.end());
  }
  if (ids.empty()) {
    const auto runs = r.runs();
    if (runs.size() < 2) throw Error(r.path() + ": diff needs two runs, the file holds " +
                                     std::to_string(runs.size()));
    ids = {runs[runs.size() - 2].id, runs.back().id};
  }
  if (ids.size() != 2) throw Error("diff takes exactly two runs: --run A --run B");
  std::fputs(format_diff(compute_stats(r, ids[0]), compute_stats(r, ids[1])).c_str(), stdout);
  return 0;
}

int trace_export(int argc, char** argv) {
  const Args args(argc, argv, {"chrome", "run", "flows", "steps"}, {});
  if (!args.has("chrome")) throw Error("export needs --chrome OUT.json (the one format so far)");
  const std::string flows_s = args.get("flows", "last");
  ChromeExportOptions options;
  if (flows_s == "all") options.flows = FlowMode::kAll;
  else if (flows_s == "none") options.flows = FlowMode::kNone;
  else if (flows_s != "last") throw Error("option '--flows' expects last, all or none, got '" + flows_s + "'");
  if (args.has("steps")) std::tie(options.first_step, options.last_step) = step_range(args.get("steps"));
  const TraceReader r(db_path(args));
  const int64_t id = run_id(r, args);
  const std::string out_path = args.get("chrome");
  ChromeExportStats st;
  write_file_safely(out_path, [&](std::ostream& out) { st = export_chrome_trace(r, id, out, options); });
  std::printf("run %lld -> %s: %lld slices, %lld flow arrows (open in https://ui.perfetto.dev)\n",
              static_cast<long long>(id), out_path.c_str(), static_cast<long long>(st.slices),
              static_cast<long long>(st.flows));
  return 0;
}

int cmd_trace(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const std::string sub = argv[1];
  for (int i = 2; i < argc; ++i)
    if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
      std::fputs(kUsage, stdout);
      return 0;
    }
  if (sub == "runs") return trace_runs(argc - 1, argv + 1);
  if (sub == "stats") return trace_stats(argc - 1, argv + 1);
  if (sub == "path") return trace_path(argc - 1, argv + 1);
  if (sub == "diff") return trace_diff(argc - 1, argv + 1);
  if (sub == "export") return trace_export(argc - 1, argv + 1);
  throw Error("unknown trace command '" + sub + "' (runs, stats, path, diff, export)");
}

}  // namespace
}  // namespace mpk

MPK_SUBCOMMAND(trace, "read a trace.db: runs, stats, path, diff, export --chrome", mpk::cmd_trace);
