// record_run: one run into a trace.db, the way every front end stores one: the executor's
// record of the run (kind, its options, batch, steps, device), the caller's labels (the
// model spec as given, settings such as pass options, a note), the executions, and the
// exact scheduled module (trace.db keeps its ir/serialize.h binary form, so a run can be
// reopened, re-run and edited without re-importing anything: driver/run_module.h).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "driver/executor.h"
#include "ir/module.h"

namespace mpk {

struct RunLabels {
  std::string model;    // the model spec as given; "" = the module's provenance source
  std::string options;  // the caller's settings, stored before the executor's
                        // (e.g. "decompose.tile=64")
  std::string note;     // stored after them (e.g. "studio: pipeline applied to run 3")
};

// The run record: executor.run_info(result) with the labels.
RunInfo run_record(const Executor& executor, const ExecResult& result, const RunLabels& labels);

// Writes the run (one transaction) and returns its id. A run that decoded from step E
// after a prefill (ExecResult::first_step) is stored from there: its steps E.. as 0..,
// with first_step=E in its options. `stored`, when given, receives the
// run as stored (to analyse it without reading the file again); `before_commit`, when
// given, runs just before the transaction commits, and what it throws undoes the run (a
// verification still in flight: CompileInFlight). Throws mpk::Error for a file that is
// not a trace.db, a newer schema, or executions that do not fit the module.
int64_t record_run(const std::string& trace_path, const Module& module, const Executor& executor,
                   const ExecResult& result, const RunLabels& labels, StoredRun* stored = nullptr,
                   const std::function<void()>& before_commit = nullptr);

}  // namespace mpk
