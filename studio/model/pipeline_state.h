// The pipeline view's state and logic, headless (no ImGui; studio/panel_pipeline.cc
// draws it). The pipeline of the current run as text and as entries that option widgets
// edit (driver/pipeline_options.h); Apply runs it over the run's stored module on a
// worker thread (studio/model/pipeline_runner.h) and opens the new run as B in the compare
// view, beside A: the source run's own schedule simulated under the same cost model
// (studio/model/loop_costs.h) and steps, so that like is compared with like; an edit session
// (driver/schedule_edit.h) on the current run's schedule, simulated under that cost
// model, whose kept edits are stored as runs (so the timeline and compare views show
// them) and can be saved as a .mpk. New runs go to a side file unless the user chose the
// opened one (studio/model/store_target.h). The edit_* functions are what the timeline's drag
// and drop and this view's keys call.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "driver/pipeline_options.h"
#include "driver/schedule_edit.h"
#include "studio/model/loop_costs.h"
#include "studio/model/pipeline_runner.h"

namespace mpk::studio {

struct StudioState;

enum class PipelineJob { kNone, kApply, kLoadSession, kStoreEdit };

struct PipelineViewState {
  // The pipeline being edited: `text`, and `entries` parsed from it (when it parses).
  std::string text;
  Pipeline entries;
  std::string text_error;   // why `text` does not parse; "" when it does
  int64_t text_run = -1;    // the run `text` was taken from
  bool text_edited = false; // changed by the user: another run does not replace it
  int32_t steps = 0;        // steps to simulate; 0: as many as the current run has

  // The cost model of Apply and hand edits, the cost files fitted to runs (run -> file),
  // and the stored simulations of a run's own schedule under some costs and steps
  // (baseline_key -> run), which new schedules are compared with.
  CostChoice costs;
  std::map<int64_t, std::string> calibrated;
  std::map<std::string, int64_t> baselines;

  PipelineRunner runner;
  PipelineJob job = PipelineJob::kNone;
  int64_t job_base_run = -1;  // the current run when the job started
  JobCosts job_costs;         // the costs it simulates with
  int64_t job_compare = -1;   // kApply: the stored run it is compared with; -1: its baseline
  std::string job_moves;      // kStoreEdit: the moves (text) of the schedule it stores
  std::string job_message;    // the last job's outcome, one line
  bool job_failed = false;

  // The edit session: on run `session_run`; `session_runs` are it and the runs that
  // hold its edited schedules (`stored`: moves text -> run), so it goes on while one of
  // them is the current run.
  // `session_costs` are the costs it simulates with, `session_base` the run its edits are
  // compared with (A): session_run when that is a simulation under those costs, else its
  // schedule simulated and stored with the first stored edit (-1 until then), whose
  // module is `session_module`.
  std::unique_ptr<ScheduleEditor> editor;
  int64_t session_run = -1;
  JobCosts session_costs;
  int64_t session_base = -1;
  std::shared_ptr<const Module> session_module;
  std::string session_model;  // the model recorded with its runs
  std::vector<int64_t> session_runs;
  std::map<std::string, int64_t> stored;
  int64_t session_failed_run = -1;  // a run whose graph could not be loaded (no retry)
  bool rebuilt_noted = false;       // the status line said once that an old trace's
                                    // runs are rebuilt (they have no stored module)
  bool auto_store = true;           // store each kept edit as a run
  bool store_pending = false;       // an edit waits for the runner to be free
  std::string edit_message;         // the last edit's outcome
  bool edit_refused = false;
  int32_t form_task = 0, form_worker = 0, form_after = -1;  // the "move" form's fields
  std::string save_path = "edited.mpk";
  std::string save_message;
  bool save_failed = false;

  // The scheduled modules of runs made by this view's jobs (editing one needs no
  // reading back), at most kKeptModules, and the trace they belong to.
  static constexpr size_t kKeptModules = 8;
  std::map<int64_t, std::shared_ptr<const Module>> modules;
  std::string trace_path;

  // Last frame: the centres of the buttons drawn ("apply", "cancel", "undo", "redo",
  // "save", "edit-run"), for tests.
  std::map<std::string, std::pair<float, float>> buttons;
};

// Parses `text` into ps.entries (or sets ps.text_error).
void set_pipeline_text(PipelineViewState& ps, std::string text);
// Sets (or, with nullopt, clears) option `key` of entry `index` and rewrites ps.text.
// Options that the entry no longer takes (after a policy or base change) are dropped.
void set_pipeline_option(PipelineViewState& ps, size_t index, const std::string& key,
                         const std::optional<std::string>& value);

// Takes a finished job's result into the state and starts a pending store. Called by
// the app every frame, whichever view is shown; cheap when nothing happened.
void poll_pipeline(StudioState& s);
// Starts running ps.text on the current run's graph, under ps.costs, storing the new run
// (and, unless stored before, the run's own schedule simulated under the same costs) in
// the store target. False (job_message or text_error set) when it cannot start.
bool apply_pipeline(StudioState& s);
void cancel_pipeline(StudioState& s);
// Picks the cost model of the next Apply and edit session; an edit session without edits
// is dropped, so that the next one loads under the new costs.
void set_cost_choice(StudioState& s, CostChoice choice);
// Starts loading the current run's graph for an edit session. False when there is one
// for it already, a job is running, or it failed before for this run.
bool begin_edit_session(StudioState& s);
// True when the session edits the current run (or one of its stored edits).
bool has_edit_session(const StudioState& s);
// Ends the session (its unsaved edits stay in the runs stored from them).
void drop_edit_session(StudioState& s);
// The task of the selected execution; -1 when none.
TaskId selected_task(const StudioState& s);

// Hand edits of the current run's schedule (refused when there is no session for it).
// A kept edit is stored as a run when ps.auto_store is set.
EditOutcome edit_move(StudioState& s, const std::vector<TaskId>& tasks, int32_t worker,
                      TaskId after);
EditOutcome edit_move_to_worker(StudioState& s, TaskId t, int32_t worker);
EditOutcome edit_shift(StudioState& s, TaskId t, int32_t delta);
bool edit_undo(StudioState& s);
bool edit_redo(StudioState& s);
// Saves the session's edited module at `path`. False (save_message says why) on error.
bool save_edits(StudioState& s, const std::string& path);

}  // namespace mpk::studio
