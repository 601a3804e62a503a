// load_run_module: TraceReader::stored_module, else the schema-1 rebuild.
#include "driver/run_module.h"

#include <filesystem>

#include "driver/compile.h"
#include "ir/error.h"
#include "ir/verifier.h"
#include "traces/trace_db.h"

namespace mpk {
namespace {

// Schema 1: the model re-imported and its pipeline re-run (unless it names a scheduled
// module file), checked against the schedule the trace stored.
Module rebuild(const TraceReader& reader, const RunRecord& r, const std::string& spec) {
  const std::string where = "run " + std::to_string(r.id) + " of " + reader.path();
  CompileRequest req;
  req.model = spec;
  req.batch = r.batch > 0 ? r.batch : 1;
  req.relative_to = std::filesystem::path(reader.path()).parent_path().string();
  Module m;
  try {
    m = import_source(req);
  } catch (const Error& e) {
    throw Error(where + ": cannot re-import its model '" + spec + "': " + e.what());
  }
  if (m.graph.schedule.empty()) run_pipeline(m, r.pipeline);
  verify_or_throw(m);
  if (reader.load_graph(r.id).graph.schedule.workers != m.graph.schedule.workers)
    throw Error(where + ": its model and pipeline rebuild another schedule than the stored one "
                "(another mpk version or max-seq?)");
  return m;
}

}  // namespace

RunModule load_run_module(const std::string& trace_path, int64_t run) {
  const TraceReader reader(trace_path);
  const RunRecord r = reader.run(run);
  RunModule out;
  out.model = r.model.rfind("preset:", 0) == 0 ? r.model.substr(7) : r.model;
  if (std::optional<Module> stored = reader.stored_module(run)) {
    out.module = std::move(*stored);
    return out;
  }
  out.module = rebuild(reader, r, out.model);
  out.note = "run " + std::to_string(run) + " of " + trace_path + " was written before trace.db " +
             "stored modules (trace schema 1): its model '" + out.model +
             "' was re-imported and its pipeline re-run";
  return out;
}

}  // namespace mpk
