// Reopening a run: the exact scheduled module a trace.db stored with it (checked by the
// reader: it parses, verifies and matches the run's graph rows). A trace.db written
// before modules were stored (trace schema 1) has none; the run's module is then rebuilt
// as mpk-studio used to: its model re-imported (at the run's batch) and its recorded
// pipeline re-run, checked against the stored schedule, and the result says so.
#pragma once

#include <cstdint>
#include <string>

#include "ir/module.h"

namespace mpk {

struct RunModule {
  Module module;      // scheduled and verified
  std::string model;  // the model spec the run recorded ("preset:" dropped)
  std::string note;   // "" for a stored module; else one line on how it was rebuilt
};

// Throws mpk::Error naming the file and run: no such run, a stored module that does not
// parse, verify or match, or (schema 1) a model that no longer imports or rebuilds
// another schedule.
RunModule load_run_module(const std::string& trace_path, int64_t run);

}  // namespace mpk
