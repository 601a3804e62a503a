// StudioState's functions: open a trace.db or a scheduled .mpk (simulated into a
// temporary trace.db), pick runs, fit the window, select executions.
#include "studio/model/state.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "driver/executor.h"
#include "driver/record.h"
#include "ir/error.h"
#include "ir/serialize.h"
#include "studio/model/panel_registry.h"
#include "studio/model/store_target.h"

namespace mpk::studio {
namespace {

namespace fs = std::filesystem;

// True when the file starts with SQLite's header string.
bool looks_like_sqlite(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[16] = {};
  in.read(magic, sizeof magic);
  return in.gcount() == 16 && std::string(magic, 15) == "SQLite format 3";
}

bool looks_like_module(const std::string& path) {
  if (fs::path(path).extension() == ".mpk") return true;
  std::ifstream in(path);
  std::string word;
  in >> word;
  return word == "mpk.module";
}

void remove_temporary(StudioState& s) {
  if (!s.trace_is_temporary || s.trace_path.empty()) return;
  s.reader.reset();
  std::error_code ec;
  fs::remove(s.trace_path, ec);
  fs::remove(s.trace_path + "-journal", ec);
  s.trace_is_temporary = false;
}

std::string temporary_trace_path() {
  static std::atomic<int> counter{0};
  return (fs::temp_directory_path() / ("mpk-studio-" + std::to_string(::getpid()) + "-" +
                                       std::to_string(counter++) + ".db"))
      .string();
}

// Closes whatever is open.
void close_input(StudioState& s) {
  s.other_ranks.clear();
  s.model.reset();
  remove_temporary(s);
  s.reader.reset();
  s.runs.clear();
  s.run = -1;
  s.compare_run = -1;
  s.compare_current_is_b = false;
  s.selection = {};
  s.input_path.clear();
  s.trace_path.clear();
  s.trace_is_side = false;
}

}  // namespace

const char* name_of(View v) { return v.name.data(); }  // a literal or a registered name

std::optional<View> parse_view(std::string_view name) {
  const PanelInfo* p = find_panel(name);
  if (!p) return std::nullopt;
  return View{p->name};
}

StudioState::StudioState() = default;

StudioState::~StudioState() {
  model.reset();
  remove_temporary(*this);
}

void set_status(StudioState& s, std::string message, bool error) {
  s.status = std::move(message);
  s.status_error = error;
}

bool open_trace(StudioState& s, const std::string& path, int64_t run) {
  close_input(s);
  try {
    auto reader = std::make_unique<TraceReader>(path);
    std::vector<RunRecord> runs = reader->runs();
    if (runs.empty()) throw Error(path + ": the trace has no runs (record one with mpk run --trace)");
    s.reader = std::move(reader);
    s.runs = std::move(runs);
    s.input_path = path;
    s.trace_path = path;
    s.trace_is_side = is_side_trace(path);
  } catch (const Error& e) {
    s.reader.reset();
    s.runs.clear();
    set_status(s, e.what(), true);
    return false;
  }
  const int64_t id = run >= 0 ? run : s.runs.back().id;
  if (!select_run(s, id)) return false;
  return true;
}

bool open_input(StudioState& s, const std::string& path, int64_t run, int32_t sim_steps) {
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    close_input(s);
    set_status(s, path + ": no such file", true);
    return false;
  }
  if (looks_like_sqlite(path) || !looks_like_module(path)) return open_trace(s, path, run);
  close_input(s);
  std::string temp;
  try {
    const Module m = load_module(path);
    if (m.graph.schedule.empty())
      throw Error(path + ": the task graph has no schedule (run a pipeline ending in "
                  "assign-sm first, e.g. mpk-opt " + path + " -o scheduled.mpk)");
    const std::unique_ptr<Executor> sim = make_executor("sim", m, ExecutorOptions{});
    const ExecResult simulated = sim->run({sim_steps, {}, true});
    temp = temporary_trace_path();
    record_run(temp, m, *sim, simulated,
               {m.provenance.source.empty() ? path : m.provenance.source, "", "studio: " + path});
  } catch (const Error& e) {
    if (!temp.empty()) fs::remove(temp, ec);
    set_status(s, e.what(), true);
    return false;
  }
  if (!open_trace(s, temp, run)) {
    fs::remove(temp, ec);
    return false;
  }
  s.input_path = path;
  s.trace_is_temporary = true;
  return true;
}

bool select_run(StudioState& s, int64_t run) {
  if (!s.reader) {
    set_status(s, "no trace is open", true);
    return false;
  }
  bool keep_window = false;
  try {
    auto model = std::make_unique<TraceModel>(*s.reader, run);
    if (!s.model || s.model->run().graph != model->run().graph) s.highlighted_tasks.clear();
    // Another rank of the same launch: the window moves onto its axis, over the same moments.
    if (s.model && launch_of(s.model->run()) == launch_of(model->run())) {
      const double shift = static_cast<double>(s.model->run().rank_offset_ns - model->run().rank_offset_ns);
      s.window = {s.window.t0_ns + shift, s.window.t1_ns + shift};
    }
    keep_window = s.model && s.window.t1_ns > 0 && s.window.t0_ns < static_cast<double>(model->duration_ns());
    s.other_ranks.clear();
    s.model = std::move(model);
  } catch (const Error& e) {
    set_status(s, e.what(), true);
    return false;
  }
  std::string ranks_error;
  try {
    s.other_ranks = load_other_ranks(*s.reader, s.model->run());
  } catch (const Error& e) {
    ranks_error = e.what();
  }
  s.run = run;
  if (s.compare_run == run) s.compare_run = -1;
  s.compare_current_is_b = false;
  s.selection = {};
  s.timeline.hovered_exec = -1;
  s.timeline.hovered_bubble = -1;
  s.timeline.hovered_rank = -1;
  if (!keep_window) fit_window(s);
  double seconds = s.model->load_seconds();
  for (const OtherRank& r : s.other_ranks) seconds += r.model->load_seconds();
  char line[256];
  std::snprintf(line, sizeof line, "run %lld: %lld executions on %d workers, loaded in %.2f s",
                static_cast<long long>(run),
                static_cast<long long>(s.model->executions().size()), s.model->num_workers(), seconds);
  std::string status = line;
  if (!s.other_ranks.empty())
    status += "; rank " + std::to_string(s.model->run().rank) + " of " + std::to_string(s.model->run().ranks) +
              ", the other ranks' rows below";
  if (!ranks_error.empty()) status += "; opened alone: " + ranks_error;
  set_status(s, status, !ranks_error.empty());
  return true;
}

void refresh_runs(StudioState& s) {
  if (!s.reader) return;
  try {
    s.runs = s.reader->runs();
  } catch (const Error& e) {
    set_status(s, e.what(), true);
  }
}

const RunRecord* find_run(const StudioState& s, int64_t id) {
  for (const RunRecord& r : s.runs)
    if (r.id == id) return &r;
  return nullptr;
}

TimeWindow launch_extent(const StudioState& s) {
  TimeWindow w{0, s.model ? static_cast<double>(s.model->duration_ns()) : 0.0};
  for (const OtherRank& r : s.other_ranks) {
    w.t0_ns = std::min(w.t0_ns, static_cast<double>(r.shift_ns));
    w.t1_ns = std::max(w.t1_ns, static_cast<double>(r.shift_ns + r.model->duration_ns()));
  }
  return w;
}

void fit_window(StudioState& s) {
  const TimeWindow e = launch_extent(s);
  const double d = std::max(e.span(), 1.0);
  s.window.t0_ns = e.t0_ns - 0.01 * d;
  s.window.t1_ns = e.t0_ns + 1.01 * d;
}

void show_execution(StudioState& s, int64_t exec) {
  if (!s.model || exec < 0) return;
  const Execution& e = s.model->execution(exec);
  const double span = s.window.span();
  const double mid = 0.5 * static_cast<double>(e.start_ns + e.end_ns);
  s.window = {mid - span / 2, mid + span / 2};
  s.timeline.scroll_to_worker = e.worker;
}

void select_execution(StudioState& s, int64_t exec) {
  if (s.selection.exec != exec) {
    s.selection.why_idle.clear();
    s.selection.show_why_idle = false;
  }
  s.selection.exec = exec;
}

}  // namespace mpk::studio
