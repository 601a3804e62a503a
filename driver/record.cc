// record_run: the run record and TraceWriter (traces/trace_db.h), which stores the module.
#include "driver/record.h"

namespace mpk {

RunInfo run_record(const Executor& executor, const ExecResult& result, const RunLabels& labels) {
  RunInfo info = executor.run_info(result);
  info.model = labels.model;
  std::string options = labels.options;
  const auto add = [&](const std::string& part) {
    if (!part.empty()) options += (options.empty() ? "" : " ") + part;
  };
  add(info.options);
  if (result.first_step > 0) {  // decoding after a prefill: the stored steps start there
    add("first_step=" + std::to_string(result.first_step));
    info.steps = result.steps - result.first_step;
  }
  add(labels.note);
  info.options = options;
  return info;
}

int64_t record_run(const std::string& trace_path, const Module& module, const Executor& executor,
                   const ExecResult& result, const RunLabels& labels, StoredRun* stored,
                   const std::function<void()>& before_commit) {
  TraceWriter writer(trace_path);
  if (before_commit) writer.set_before_commit(before_commit);
  const RunInfo info = run_record(executor, result, labels);
  if (result.first_step == 0) return writer.write_run(module, info, result.executions, stored);
  std::vector<Execution> from_first = result.executions;
  for (Execution& x : from_first) x.step -= static_cast<int32_t>(result.first_step);
  return writer.write_run(module, info, from_first, stored);
}

}  // namespace mpk
