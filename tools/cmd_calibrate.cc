// `mpk calibrate TRACE.db [--run N] -o costs.json`: fits the simulator's cost
// parameters (event latency, dispatch gap, fixed ns and bytes factor per task kind) to
// a recorded run, writes them as a cost file, then re-simulates the run's scheduled
// graph with them and prints simulated against measured makespan per step.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "ir/error.h"
#include "tools/args.h"
#include "tools/subcommands.h"
#include "traces/analysis.h"
#include "traces/calibrate.h"
#include "traces/simulator.h"
#include "traces/text_table.h"
#include "traces/trace_db.h"

namespace mpk {
namespace {

constexpr const char* kUsage =
    "usage: mpk calibrate TRACE.db [--run N] -o COSTS.json [--base COSTS.json]\n"
    "                     [--match-makespan]\n\n"
    "Fits the simulator's cost model to run N (default: the newest): event latency and\n"
    "dispatch gap (medians), one SM's bandwidth limit, and per task kind a fixed time and a\n"
    "factor on its bytes (least squares under the run's own bandwidth sharing). --base supplies the bandwidths and the\n"
    "values a run cannot determine (default: the run's device). Then simulates the same\n"
    "graph with the fitted costs and compares makespan per step. --match-makespan then\n"
    "sets the event latency so that the simulated makespan per step matches the measured\n"
    "one (an effective latency that absorbs what the model misses).\n";

int cmd_calibrate(int argc, char** argv) {
  const Args args(argc, argv, {"run", "o", "output", "base"}, {"help", "h", "match-makespan"});
  if (args.flag("help") || args.flag("h")) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (args.positionals().size() != 1) throw Error("expected one trace.db path (see --help)");
  const std::string out = args.get("o", args.get("output"));
  if (out.empty()) throw Error("missing -o COSTS.json (where to write the fitted costs)");
  const TraceReader reader(args.positionals()[0]);
  const int64_t id = args.has("run") ? args.get_int("run", 0) : reader.last_run();
  const RunRecord run = reader.run(id);
  const Module graph = reader.load_graph(id);
  const std::vector<Execution> execs = reader.executions(id);
  if (execs.empty()) throw Error(reader.path() + ": run " + std::to_string(id) + " has no executions");

  CostParams base = CostParams::from_machine(graph.machine);
  if (args.has("base")) base = load_cost_params(args.get("base"), base);
  Calibration cal = calibrate(graph, execs, base);
  check_cost_params(cal.params, "calibrated costs");  // what a cost file may say
  cal.params.note = "calibrated from " + reader.path() + " run " + std::to_string(id) + " (" +
                    run.kind + ", " + run.model + ", " + run.policy + ")";
  std::printf("run %lld: %s %s %s, %lld steps, %zu executions on %s\n\n",
              static_cast<long long>(id), run.kind.c_str(), run.model.c_str(), run.policy.c_str(),
              static_cast<long long>(run.steps), execs.size(), run.device.name.c_str());
  std::printf("event latency  %s  (median of %lld waits)\n",
              format_ns(cal.params.event_latency_ns).c_str(),
              static_cast<long long>(cal.latency_samples));
  std::printf("SM bandwidth   %.1f GB/s  (%s; device %.0f GB/s shared)\n",
              cal.params.sm_bandwidth * 1e-9,
              cal.sm_bandwidth_fitted ? "fitted" : "kept from the base",
              cal.params.mem_bandwidth * 1e-9);
  std::printf("dispatch gap   %s  (median of %lld gaps)\n\n",
              format_ns(cal.params.dispatch_ns).c_str(),
              static_cast<long long>(cal.dispatch_samples));
  TextTable t({"task kind", "samples", "mean", "fixed", "bytes x", "rms error"});
  for (const KindFit& f : cal.fits)
    t.add({std::string(name_of(f.kind)), std::to_string(f.samples), format_ns(f.mean_ns),
           format_ns(f.fixed_ns), strf("%.3f", f.bytes_scale), format_ns(f.rms_error_ns)});
  std::fputs(t.str(0).c_str(), stdout);

  const int32_t steps = static_cast<int32_t>(run.steps);
  const double measured = mean_step_ns(execs, steps);
  auto report = [&](const char* what, double simulated) {
    double err = measured > 0 ? (simulated - measured) / measured : 0;
    if (std::fabs(err) < 0.0005) err = 0;  // print +0.0, not -0.0
    std::printf("makespan per step%s: measured %s, simulated %s (%+.1f %%)\n", what,
                format_ns(measured).c_str(), format_ns(simulated).c_str(), 100.0 * err);
  };
  std::printf("\n");
  report("", mean_step_ns(simulate(graph, cal.params, steps), steps));
  if (args.flag("match-makespan")) {
    const double fitted = cal.params.event_latency_ns;
    match_makespan(graph, steps, measured, cal.params);
    cal.params.note += strf("; event latency %.0f ns matched to the makespan (measured %.0f ns)",
                            cal.params.event_latency_ns, fitted);
    report(strf(" with event latency %s", format_ns(cal.params.event_latency_ns).c_str()).c_str(),
           mean_step_ns(simulate(graph, cal.params, steps), steps));
  }
  save_cost_params(cal.params, out);
  std::printf("costs -> %s   (schedule and simulate with it: mpk run --costs %s ...)\n", out.c_str(),
              out.c_str());
  return 0;
}

}  // namespace
}  // namespace mpk

MPK_SUBCOMMAND(calibrate, "fit the simulator's cost model to a recorded run", mpk::cmd_calibrate);
