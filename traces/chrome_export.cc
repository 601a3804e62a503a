// Chrome trace event JSON writer.
#include "traces/chrome_export.h"

#include <string>

#include "ir/error.h"

#include "traces/run_derive.h"
#include "traces/text_table.h"

namespace mpk {
namespace {

std::string json_str(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += strf("\\u%04x", c);
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string us(int64_t ns) { return strf("%.3f", static_cast<double>(ns) * 1e-3); }

class EventWriter {
 public:
  explicit EventWriter(std::ostream& out) : out_(out) { out_ << "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n"; }
  void add(const std::string& event) {
    if (!first_) out_ << ",\n";
    first_ = false;
    out_ << event;
  }
  void finish() { out_ << "\n]}\n"; }

 private:
  std::ostream& out_;
  bool first_ = true;
};

}  // namespace

ChromeExportStats export_chrome_trace(const TraceReader& reader, int64_t run, std::ostream& out,
                                      const ChromeExportOptions& options) {
  const FlowMode flows = options.flows;
  const auto in_range = [&](int64_t step) {
    return step >= options.first_step && (options.last_step < 0 || step <= options.last_step);
  };
  const auto in_time = [&](int64_t start, int64_t end) {
    return (end > options.t0_ns || start >= options.t0_ns) && (options.t1_ns < 0 || start < options.t1_ns);
  };
  const auto keep = [&](const Execution& e) { return in_range(e.step) && in_time(e.start_ns, e.end_ns); };
  const RunRecord r = reader.run(run);
  const bool ranged = options.first_step != 0 || options.last_step != -1;
  for (const int64_t k : {options.first_step, options.last_step < 0 ? options.first_step : options.last_step})
    if (ranged && (k < 0 || k >= r.steps))
      throw Error("run " + std::to_string(run) + " has no step " + std::to_string(k) +
                  (r.steps > 0 ? " (steps 0.." + std::to_string(r.steps - 1) + ")" : " (it ran none)"));
  const Module m = reader.load_graph(run);
  const std::vector<Execution> execs = reader.executions(run);
  ChromeExportStats stats;
  EventWriter w(out);
  const int pid = 1;
  const int steps_tid = r.num_workers;

  w.add(strf("{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"args\":{\"name\":%s}}", pid,
             json_str(strf("mpk run %lld: %s, %s (%s)", static_cast<long long>(r.id),
                           r.model.c_str(), r.policy.c_str(), r.kind.c_str()))
                 .c_str()));
  std::vector<int32_t> sm_of(r.num_workers, -1);
  for (const Execution& e : execs)
    if (e.worker >= 0 && e.worker < r.num_workers && sm_of[e.worker] < 0) sm_of[e.worker] = e.sm;
  auto track = [&](int tid, const std::string& name, int sort) {
    w.add(strf("{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":%s}}",
               pid, tid, json_str(name).c_str()));
    w.add(strf("{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,"
               "\"args\":{\"sort_index\":%d}}",
               pid, tid, sort));
  };
  track(steps_tid, "steps", -1);
  for (int32_t k = 0; k < r.num_workers; ++k)
    track(k, sm_of[k] >= 0 ? strf("worker %d (SM %d)", k, sm_of[k]) : strf("worker %d", k), k);

  for (const StepRecord& st : reader.steps(run))
    if (in_range(st.step) && in_time(st.start_ns, st.end_ns)) w.add(strf("{\"name\":\"step %d\",\"cat\":\"step\",\"ph\":\"X\",\"pid\":%d,\"tid\":%d,"
               "\"ts\":%s,\"dur\":%s,\"args\":{\"step\":%d,\"busy_ns\":%lld}}",
               st.step, pid, steps_tid, us(st.start_ns).c_str(), us(st.end_ns - st.start_ns).c_str(),
               st.step, static_cast<long long>(st.busy_ns)));

  std::vector<std::string> op_json(m.program.ops.size());
  for (size_t i = 0; i < m.program.ops.size(); ++i) op_json[i] = json_str(m.program.ops[i].name);
  for (const Execution& e : execs) {
    if (!keep(e)) continue;
    const Task& t = m.graph.tasks[e.task];
    const bool has_op = t.op >= 0 && static_cast<size_t>(t.op) < m.program.ops.size();
    const std::string& name = has_op ? op_json[t.op] : json_str("task " + std::to_string(e.task));
    const int32_t layer = has_op ? m.program.ops[t.op].layer : -1;
    w.add(strf("{\"name\":%s,\"cat\":\"%s\",\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":%s,"
               "\"dur\":%s,\"args\":{\"task\":%d,\"op\":%d,\"operator\":%s,\"layer\":%d,"
               "\"step\":%d,\"sm\":%d,\"wait_ns\":%lld,\"bytes\":%lld}}",
               name.c_str(), std::string(name_of(t.kind)).c_str(), pid, e.worker,
               us(e.start_ns).c_str(), us(e.end_ns - e.start_ns).c_str(), e.task, t.op,
               name.c_str(), layer, e.step, e.sm,
               static_cast<long long>(e.start_ns - e.wait_begin_ns),
               static_cast<long long>(t.bytes)));
    ++stats.slices;
  }

  if (flows != FlowMode::kNone) {
    const BlameIndex blames(m, execs, static_cast<int32_t>(r.steps));
    const ExecutionIndex& index = blames.executions();
    auto arrow = [&](const Execution& from, const Execution& to) {
      // The start binds to the producer's slice (just inside its end), the finish to
      // the consumer's slice that starts at its timestamp.
      const int64_t at = from.end_ns > from.start_ns ? from.end_ns - 1 : from.start_ns;
      const long long id = ++stats.flows;
      w.add(strf("{\"name\":\"dependency\",\"cat\":\"dependency\",\"ph\":\"s\",\"id\":%lld,"
                 "\"pid\":%d,\"tid\":%d,\"ts\":%s}",
                 id, pid, from.worker, us(at).c_str()));
      w.add(strf("{\"name\":\"dependency\",\"cat\":\"dependency\",\"ph\":\"f\",\"bp\":\"e\","
                 "\"id\":%lld,\"pid\":%d,\"tid\":%d,\"ts\":%s}",
                 id, pid, to.worker, us(to.start_ns).c_str()));
    };
    for (const Execution& e : execs) {
      if (!keep(e)) continue;
      if (flows == FlowMode::kLast) {
        const Blame b = blames.blame(e);
        if (b.event >= 0 && keep(execs[b.producer_exec])) arrow(execs[b.producer_exec], e);
        continue;
      }
      for (EventId ev : blames.graph().waits(e.task)) {
        const int32_t step = e.step - blames.graph().distance(ev);
        for (TaskId prod : blames.graph().producers(ev)) {
          const int64_t p = index.find(prod, step);
          if (p >= 0 && keep(execs[p])) arrow(execs[p], e);
        }
      }
    }
  }
  w.finish();
  return stats;
}

}  // namespace mpk
