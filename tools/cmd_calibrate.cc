// `mpk calibrate TRACE.db[:RUN,...]... -o costs.json`: fits the cost model (ir/cost_params.h)
// to one or more recorded runs (traces/calibrate.h), writes it as a cost file, and says how
// well it explains them: per task kind the median and 90th percentile of the per-task
// duration error, per run the makespan per step, simulated against measured
// (traces/model_error.h). `--validate`: leave one (model, policy) pair out at a time,
// calibrate on the others, predict it, and compare the policies' rankings per model.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "ir/error.h"
#include "tools/args.h"
#include "tools/subcommands.h"
#include "traces/analysis.h"
#include "traces/calibrate.h"
#include "traces/model_error.h"
#include "traces/simulator.h"
#include "traces/text_table.h"
#include "traces/trace_db.h"

namespace mpk {
namespace {

constexpr const char* kUsage =
    "usage: mpk calibrate TRACE.db[:RUN[,RUN...]]... [--run N] [--kind gpu|sim|cpu|any]\n"
    "                     [-o COSTS.json] [--base COSTS.json] [--match-makespan] [--validate]\n\n"
    "Fits the cost model to the runs given: RUN ids after a file, or --run N (one file), else\n"
    "every run of --kind (default: gpu where the files hold gpu runs, else every run). Event\n"
    "latency with its growth per triggered event and per consumer, dispatch and step-boundary\n"
    "gaps, one SM's bandwidth limit, the weight stream's ring, positional KV-cache reads, and\n"
    "per task kind a fixed time and a factor on its bytes (least squares under each run's\n"
    "bandwidth sharing). --base supplies the bandwidths and the values runs cannot determine\n"
    "(default: the first run's device). Then simulates every run with the fitted costs and\n"
    "prints per task kind the median and p90 of the per-task duration error and per run the\n"
    "makespan per step, simulated against measured. -o writes the cost file.\n"
    "  --match-makespan (one run): then sets the event latency so that the simulated\n"
    "  makespan per step matches the measured one (an effective latency).\n"
    "  --validate: for each (model, policy) pair, calibrates on the runs of the other pairs\n"
    "  and predicts the pair's step time; prints predicted against measured and the\n"
    "  policies' ranking per model, measured and predicted.\n";

// The runs named by the positionals: "file" or "file:3,5".
std::vector<CalibrationRun> load_runs(const Args& args) {
  if (args.positionals().empty()) throw Error("expected at least one trace.db (see --help)");
  if (args.has("run") && args.positionals().size() != 1)
    throw Error("--run names a run of one file; give several as FILE:RUN,RUN");
  const std::string kind = args.get("kind", "");
  if (!kind.empty() && kind != "gpu" && kind != "sim" && kind != "cpu" && kind != "any")
    throw Error("option '--kind' expects gpu, sim, cpu or any, got '" + kind + "'");
  struct Spec {
    std::unique_ptr<TraceReader> reader;
    std::vector<int64_t> ids;
  };
  std::vector<Spec> specs;
  bool any_gpu = false;
  for (const std::string& p : args.positionals()) {
    const size_t colon = p.rfind(':');
    const bool with_ids = colon != std::string::npos && colon + 1 < p.size() &&
                          p.find_first_not_of("0123456789,", colon + 1) == std::string::npos;
    Spec s{std::make_unique<TraceReader>(with_ids ? p.substr(0, colon) : p), {}};
    if (with_ids) s.ids = parse_int_list(p.substr(colon + 1), "runs of " + p, {1, kAnyInt64.hi});
    else if (args.has("run")) s.ids = {args.get_int("run", 0)};
    for (const RunRecord& r : s.reader->runs()) any_gpu = any_gpu || r.kind == "gpu";
    specs.push_back(std::move(s));
  }
  const std::string want = !kind.empty() ? kind : any_gpu ? "gpu" : "any";
  std::vector<CalibrationRun> runs;
  for (Spec& s : specs) {
    if (s.ids.empty())
      for (const RunRecord& r : s.reader->runs())
        if (want == "any" || r.kind == want) s.ids.push_back(r.id);
    for (int64_t id : s.ids) runs.push_back(load_calibration_run(*s.reader, id));
  }
  if (runs.empty()) throw Error("no " + (want == "any" ? std::string() : want + " ") + "runs in the files given");
  return runs;
}

void print_latencies(const Calibration& cal) {
  const CostParams& p = cal.params;
  std::printf("event latency  %s + %s per triggered event + %s per consumer  (%lld waits)\n",
              format_ns(p.event_latency_ns).c_str(), format_ns(p.trigger_ns).c_str(),
              format_ns(p.fanout_ns).c_str(), static_cast<long long>(cal.latency_samples));
  std::printf("dispatch gap   %s  (%lld gaps); step boundary +%s  (%lld)\n",
              format_ns(p.dispatch_ns).c_str(), static_cast<long long>(cal.dispatch_samples),
              format_ns(p.step_ns).c_str(), static_cast<long long>(cal.step_samples));
  if (cal.link_samples > 0)
    std::printf("link latency   +%s beyond a local release  (%lld cross-GPU waits)\n",
                format_ns(p.link_latency_ns).c_str(), static_cast<long long>(cal.link_samples));
  std::printf("SM bandwidth   %.1f GB/s  (%s; device %.0f GB/s shared)\n", p.sm_bandwidth * 1e-9,
              cal.sm_bandwidth_fitted ? "fitted" : "kept from the base", p.mem_bandwidth * 1e-9);
  std::printf("ring           %s; KV-cache reads %s\n\n",
              p.prefetch_bytes > 0 ? strf("%.0f KiB streamed ahead", p.prefetch_bytes / 1024).c_str()
                                   : "none (no bytes streamed ahead)",
              p.positional_cache ? "by position" : "whole");
}

void print_explained(const Calibration& cal, const ModelError& err) {
  std::map<TaskKind, const KindError*> by_kind;
  for (const KindError& e : err.kinds) by_kind[e.kind] = &e;
  TextTable t({"task kind", "samples", "mean", "fixed", "bytes x", "fit rms", "err median", "err p90"});
  for (const KindFit& f : cal.fits) {
    const KindError* e = by_kind.count(f.kind) ? by_kind[f.kind] : nullptr;
    t.add({std::string(name_of(f.kind)), std::to_string(f.samples), format_ns(f.mean_ns),
           format_ns(f.fixed_ns), strf("%.3f", f.bytes_scale), format_ns(f.rms_error_ns),
           e ? strf("%.1f %%", 100 * e->median) : "-", e ? strf("%.1f %%", 100 * e->p90) : "-"});
  }
  std::fputs(t.str(0).c_str(), stdout);
  std::printf("\n");
  TextTable r({"run", "model", "policy", "measured/step", "simulated/step", "error"});
  for (const RunPrediction& p : err.runs)
    r.add({p.label, p.model, p.policy, format_ns(p.measured_step_ns), format_ns(p.predicted_step_ns),
           strf("%+.1f %%", 100 * p.error())});
  std::fputs(r.str(0).c_str(), stdout);
}

void print_validation(const std::vector<CalibrationRun>& runs, const CostParams& base) {
  const std::vector<PairPrediction> pairs = leave_one_pair_out(runs, base);
  std::printf("\nleave one (model, policy) pair out: calibrated on the other pairs' runs\n");
  TextTable t({"model", "policy", "runs", "measured/step", "predicted/step", "error"});
  double worst = 0;
  for (const PairPrediction& p : pairs) {
    const RunPrediction& x = p.prediction;
    t.add({x.model, x.policy, std::to_string(p.runs), format_ns(x.measured_step_ns),
           format_ns(x.predicted_step_ns), strf("%+.1f %%", 100 * x.error())});
    worst = std::max(worst, std::fabs(x.error()));
  }
  std::fputs(t.str(0).c_str(), stdout);
  std::printf("largest error %.1f %%\n\n", 100 * worst);
  for (const Ranking& r : rankings(pairs)) {
    auto join = [](const std::vector<std::string>& v) {
      std::string s;
      for (const std::string& x : v) s += (s.empty() ? "" : " < ") + x;
      return s;
    };
    std::printf("%s: measured  %s\n%*s  predicted %s  (%s)\n", r.model.c_str(), r.measured_text().c_str(),
                static_cast<int>(r.model.size()), "", join(r.predicted).c_str(),
                r.same() ? "same ranking" : "ranking differs");
  }
  std::printf("(policies within %.1f %% of each other measured are tied)\n", 100 * kRankingTie);
}

int cmd_calibrate(int argc, char** argv) {
  const Args args(argc, argv, {"run", "kind", "o", "output", "base"},
                  {"help", "h", "match-makespan", "validate"});
  if (args.flag("help") || args.flag("h")) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  const std::string out = args.get("o", args.get("output"));
  if (out.empty() && !args.flag("validate"))
    throw Error("missing -o COSTS.json (where to write the fitted costs)");
  const std::vector<CalibrationRun> runs = load_runs(args);
  if (args.flag("match-makespan") && runs.size() != 1)
    throw Error("--match-makespan matches one run's makespan; " + std::to_string(runs.size()) + " runs were given");
  CostParams base = CostParams::from_machine(runs.front().module.machine);
  if (args.has("base")) base = load_cost_params(args.get("base"), base);
  std::printf("%zu run%s:\n", runs.size(), runs.size() == 1 ? "" : "s");
  for (const CalibrationRun& r : runs)
    std::printf("  %s: %s, %s, %d steps, %zu executions on %s\n", r.label.c_str(), r.model.c_str(),
                r.policy.c_str(), r.steps, r.executions.size(), r.module.machine.name.c_str());
  std::printf("\n");

  Calibration cal = calibrate(runs, base);
  check_cost_params(cal.params, "calibrated costs");  // what a cost file may say
  cal.params.note = "calibrated from " + runs.front().label +
                    (runs.size() > 1 ? strf(" and %zu more runs", runs.size() - 1) : std::string());
  print_latencies(cal);
  print_explained(cal, model_error(runs, cal.params));
  if (args.flag("match-makespan")) {
    const CalibrationRun& r = runs.front();
    const double fitted = cal.params.event_latency_ns;
    const double err = match_makespan(r.module, r.steps, mean_step_ns(r.executions, r.steps), cal.params);
    cal.params.note += strf("; event latency %.0f ns matched to the makespan (fitted %.0f ns)",
                            cal.params.event_latency_ns, fitted);
    std::printf("\nwith event latency %s (matched): makespan per step error %+.1f %%\n",
                format_ns(cal.params.event_latency_ns).c_str(), 100 * err);
  }
  if (!out.empty()) {
    save_cost_params(cal.params, out);
    std::printf("\ncosts -> %s   (schedule and simulate with it: mpk run --costs %s ...)\n", out.c_str(),
                out.c_str());
  }
  if (args.flag("validate")) print_validation(runs, base);
  return 0;
}

}  // namespace
}  // namespace mpk

MPK_SUBCOMMAND(calibrate, "fit the cost model to recorded runs; validate it leaving runs out",
               mpk::cmd_calibrate);
