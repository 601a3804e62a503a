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
  add(labels.note);
  info.options = options;
  return info;
}

int64_t record_run(const std::string& trace_path, const Module& module, const Executor& executor,
                   const ExecResult& result, const RunLabels& labels, StoredRun* stored,
                   const std::function<void()>& before_commit) {
  TraceWriter writer(trace_path);
  if (before_commit) writer.set_before_commit(before_commit);
  return writer.write_run(module, run_record(executor, result, labels), result.executions, stored);
}

}  // namespace mpk
