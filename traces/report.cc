// Text reports of run statistics (`mpk trace stats`, `mpk trace diff`).
#include <algorithm>
#include <cmath>
#include <map>

#include "traces/analysis.h"
#include "traces/text_table.h"

namespace mpk {

std::string format_ns(double ns) {
  const double a = std::fabs(ns);
  if (a < 0.5) return "0 ns";
  if (a >= 1e9) return strf("%.3f s", ns * 1e-9);
  if (a >= 1e6) return strf("%.3f ms", ns * 1e-6);
  if (a >= 1e3) return strf("%.2f us", ns * 1e-3);
  return strf("%.0f ns", ns);
}

namespace {

const BubbleCause kCauses[] = {BubbleCause::kWait, BubbleCause::kQueueEmpty,
                               BubbleCause::kStepTail, BubbleCause::kOverhead};

std::string pct(double v) { return strf("%.1f %%", 100.0 * v); }

// A signed change in percent or percentage points; tiny values print as +0.0.
std::string signed_change(double v, const char* unit) {
  return strf("%+.1f %s", std::fabs(v) < 0.05 ? 0.0 : v, unit);
}

double sm_time(const RunStats& s) {
  return static_cast<double>(s.run.num_workers) * static_cast<double>(s.run.duration_ns);
}

double per_step(const RunStats& s, double v) {
  return s.run.steps > 0 ? v / static_cast<double>(s.run.steps) : v;
}

}  // namespace

std::string format_run_title(const RunRecord& r) {
  std::string t = strf("run %lld  %s  %s  %s", static_cast<long long>(r.id), r.kind.c_str(),
                       r.model.c_str(), r.policy.c_str());
  if (!r.policy_params.empty() && r.policy_params != "{}") t += " " + r.policy_params;
  t += strf("  batch %lld  %lld steps  %d workers  %s", static_cast<long long>(r.batch),
            static_cast<long long>(r.steps), r.num_workers, r.device.name.c_str());
  if (r.ranks > 1) t += strf("  rank %d of %d", r.rank, r.ranks);
  if (!r.options.empty()) t += "\n  options: " + r.options;
  return t + "\n";
}

std::string format_stats(const RunStats& s, bool full_path) {
  std::string out = format_run_title(s.run);
  out += strf("  makespan per step  mean %s, median %s\n", format_ns(s.mean_step_ns).c_str(),
              format_ns(s.median_step_ns).c_str());
  out += strf("  SM utilization     %s of %d workers x %s\n", pct(s.utilization).c_str(),
              s.run.num_workers, format_ns(static_cast<double>(s.run.duration_ns)).c_str());

  out += "\nsteps\n";
  TextTable steps({"step", "start", "makespan", "busy/SM"});
  for (const StepRecord& st : s.steps) {
    const double span = static_cast<double>(st.end_ns - st.start_ns);
    const double cap = span * s.run.num_workers;
    steps.add({std::to_string(st.step), format_ns(static_cast<double>(st.start_ns)),
               format_ns(span), cap > 0 ? pct(static_cast<double>(st.busy_ns) / cap) : "-"});
  }
  out += steps.str();

  out += "\nidle time by cause (share of all SM time)\n";
  TextTable causes({"cause", "per step", "share"});
  const double total = sm_time(s);
  for (BubbleCause c : kCauses) {
    const double v = static_cast<double>(s.bubble_ns[static_cast<size_t>(c)]);
    causes.add({name_of(c), format_ns(per_step(s, v)), total > 0 ? pct(v / total) : "-"});
    if (c != BubbleCause::kWait) continue;
    // The wait's two causes: the schedule (the producer still ran) or the runtime (the
    // release had yet to reach the waiter).
    for (const auto& [label, ns] : {std::pair<const char*, int64_t>{"  producer running", s.wait_running_ns},
                                    std::pair<const char*, int64_t>{"  after release", s.wait_released_ns}}) {
      const double w = static_cast<double>(ns);
      causes.add({label, format_ns(per_step(s, w)), total > 0 ? pct(w / total) : "-"});
    }
  }
  out += causes.str();
  if (s.waits_released > 0)
    out += strf("  %lld waits lasted past their producer's end, by %s on average\n",
                static_cast<long long>(s.waits_released),
                format_ns(static_cast<double>(s.wait_released_ns) / static_cast<double>(s.waits_released)).c_str());

  if (!s.longest_waits.empty()) {
    out += "\nlongest waits\n";
    TextTable w({"wait", "worker", "step", "task", "operator", "event", "producer", "producer op",
                 "on worker"});
    for (const WaitRecord& r : s.longest_waits)
      w.add({format_ns(static_cast<double>(r.duration_ns)), std::to_string(r.worker),
             std::to_string(r.step), std::to_string(r.task), r.op, std::to_string(r.event),
             std::to_string(r.producer), r.producer_op, std::to_string(r.producer_worker)});
    out += w.str();
  }

  out += "\ntime per operator kind (summed over SMs)\n";
  TextTable k({"kind", "tasks/step", "SM time/step", "share", "mean task", "wait/step"});
  for (const KindTime& kt : s.kinds) {
    const double t = static_cast<double>(kt.total_ns);
    k.add({kt.kind, strf("%.0f", per_step(s, static_cast<double>(kt.executions))),
           format_ns(per_step(s, t)), s.busy_ns > 0 ? pct(t / static_cast<double>(s.busy_ns)) : "-",
           kt.executions ? format_ns(t / static_cast<double>(kt.executions)) : "-",
           format_ns(per_step(s, static_cast<double>(kt.wait_ns)))});
  }
  out += k.str();

  if (s.path_step >= 0) {
    out += strf("\ncritical path of step %d: %s = %s in %lld tasks + %s waiting\n", s.path_step,
                format_ns(static_cast<double>(s.path_busy_ns + s.path_gap_ns)).c_str(),
                format_ns(static_cast<double>(s.path_busy_ns)).c_str(),
                static_cast<long long>(s.path_tasks),
                format_ns(static_cast<double>(s.path_gap_ns)).c_str());
    TextTable pk({"kind", "tasks", "busy", "share"});
    for (const KindTime& kt : s.path_kinds)
      pk.add({kt.kind, std::to_string(kt.executions), format_ns(static_cast<double>(kt.total_ns)),
              s.path_busy_ns ? pct(static_cast<double>(kt.total_ns) / s.path_busy_ns) : "-"});
    out += pk.str();
    if (full_path) {
      out += "\n";
      TextTable p({"#", "operator", "kind", "tasks", "busy", "waited before"});
      for (size_t i = 0; i < s.path.size(); ++i) {
        const PathSegment& seg = s.path[i];
        p.add({std::to_string(i), seg.name, seg.kind, std::to_string(seg.tasks),
               format_ns(static_cast<double>(seg.busy_ns)),
               format_ns(static_cast<double>(seg.gap_ns))});
      }
      out += p.str();
    } else {
      out += strf("  (%zu operators on the path; --path lists them)\n", s.path.size());
    }
  }
  return out;
}

std::string format_brief(const RunStats& s) {
  std::string out = strf("makespan per step  %s mean, %s median\n", format_ns(s.mean_step_ns).c_str(),
                         format_ns(s.median_step_ns).c_str());
  out += strf("SM utilization     %s of %d workers\n", pct(s.utilization).c_str(), s.run.num_workers);
  out += "idle by cause     ";
  const double total = sm_time(s);
  for (BubbleCause c : kCauses)
    out += strf(" %s %s%s", name_of(c),
                total > 0 ? pct(s.bubble_ns[static_cast<size_t>(c)] / total).c_str() : "-",
                c == BubbleCause::kOverhead ? "\n" : ",");
  if (s.path_step >= 0)
    out += strf("critical path      step %d: %s in %lld tasks + %s waiting\n", s.path_step,
                format_ns(static_cast<double>(s.path_busy_ns)).c_str(),
                static_cast<long long>(s.path_tasks),
                format_ns(static_cast<double>(s.path_gap_ns)).c_str());
  return out;
}

std::string format_diff(const RunStats& a, const RunStats& b) {
  std::string out = "A: " + format_run_title(a.run) + "B: " + format_run_title(b.run) + "\n";
  TextTable t({"metric", "A", "B", "B - A", "change"});
  auto time_row = [&](const std::string& name, double va, double vb) {
    t.add({name, format_ns(va), format_ns(vb), format_ns(vb - va),
           va != 0 ? signed_change(100.0 * (vb - va) / va, "%") : "-"});
  };
  auto share_row = [&](const std::string& name, double va, double vb) {
    t.add({name, pct(va), pct(vb), signed_change(100.0 * (vb - va), "pt"), ""});
  };
  time_row("makespan/step (mean)", a.mean_step_ns, b.mean_step_ns);
  time_row("makespan/step (median)", a.median_step_ns, b.median_step_ns);
  share_row("SM utilization", a.utilization, b.utilization);
  for (BubbleCause c : kCauses) {
    const auto i = static_cast<size_t>(c);
    const double ta = sm_time(a), tb = sm_time(b);
    share_row(std::string("idle: ") + name_of(c), ta > 0 ? a.bubble_ns[i] / ta : 0,
              tb > 0 ? b.bubble_ns[i] / tb : 0);
  }
  time_row("critical path: busy", static_cast<double>(a.path_busy_ns),
           static_cast<double>(b.path_busy_ns));
  time_row("critical path: waiting", static_cast<double>(a.path_gap_ns),
           static_cast<double>(b.path_gap_ns));
  t.add({"critical path: tasks", std::to_string(a.path_tasks), std::to_string(b.path_tasks),
         strf("%+lld", static_cast<long long>(b.path_tasks - a.path_tasks)), ""});
  out += t.str();

  out += "\nSM time per step by operator kind\n";
  std::map<std::string, std::pair<double, double>> kinds;
  for (const KindTime& k : a.kinds) kinds[k.kind].first = per_step(a, static_cast<double>(k.total_ns));
  for (const KindTime& k : b.kinds) kinds[k.kind].second = per_step(b, static_cast<double>(k.total_ns));
  TextTable kt({"kind", "A", "B", "B - A", "change"});
  std::vector<std::pair<std::string, std::pair<double, double>>> rows(kinds.begin(), kinds.end());
  std::sort(rows.begin(), rows.end(),
            [](const auto& x, const auto& y) { return x.second.first > y.second.first; });
  for (const auto& [kind, v] : rows)
    kt.add({kind, format_ns(v.first), format_ns(v.second), format_ns(v.second - v.first),
            v.first != 0 ? signed_change(100.0 * (v.second - v.first) / v.first, "%") : "-"});
  out += kt.str();
  return out;
}

}  // namespace mpk
