// The pipeline view's logic: pipeline text and option edits, jobs on the runner (apply,
// load an edit session, store an edit) and what their results do to the StudioState,
// and the hand-edit entry points.
#include "studio/model/pipeline_state.h"

#include <algorithm>
#include <cstdio>

#include "ir/error.h"
#include "studio/model/state.h"
#include "studio/model/store_target.h"
#include "traces/shipped_costs.h"

namespace mpk::studio {
namespace {

std::string micros(double ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f us", ns * 1e-3);
  return buf;
}

// A new trace drops everything tied to the old one's runs.
void track_trace(StudioState& s) {
  PipelineViewState& p = s.pipeline;
  if (p.trace_path == s.trace_path) return;
  p.runner.cancel();
  p.job = PipelineJob::kNone;
  p.trace_path = s.trace_path;
  p.modules.clear();
  p.editor.reset();
  p.session_run = -1;
  p.session_runs.clear();
  p.stored.clear();
  p.session_failed_run = -1;
  p.session_base = -1;
  p.session_module.reset();
  p.calibrated.clear();
  p.baselines.clear();
  p.rebuilt_noted = false;
  p.store_pending = false;
  p.text_run = -1;
  p.text_edited = false;
}

int32_t job_steps(const StudioState& s) {
  if (s.pipeline.steps > 0) return s.pipeline.steps;
  const RunRecord* r = find_run(s, s.run);
  return r && r->steps > 0 ? static_cast<int32_t>(r->steps) : 8;
}

std::string baseline_key(int64_t run, const JobCosts& c, int64_t steps) {
  return std::to_string(run) + " " + c.recorded() + " " + std::to_string(steps);
}

// The stored run that simulates run `run`'s own schedule under `c` for `steps` steps:
// the run itself when it is one, else one stored before; -1 when there is none.
int64_t compared_run(const StudioState& s, int64_t run, const JobCosts& c, int64_t steps) {
  const RunRecord* r = find_run(s, run);
  if (r && simulates_under(*r, c.recorded(), steps)) return run;
  const auto it = s.pipeline.baselines.find(baseline_key(run, c, steps));
  return it != s.pipeline.baselines.end() && find_run(s, it->second) ? it->second : -1;
}

double step_ns_of(const StudioState& s, int64_t run) {
  const RunRecord* r = find_run(s, run);
  return r && r->steps > 0 ? static_cast<double>(r->duration_ns) / static_cast<double>(r->steps) : 0;
}

// "A run 2 (run 1's schedule) 21.70 us, B run 3 20.10 us a step (-7.4 %), simulated
// under the machine model".
std::string comparison_line(int64_t a, int64_t source, double a_ns, int64_t b, double b_ns,
                            const JobCosts& c) {
  char change[32];
  std::snprintf(change, sizeof change, "%+.1f %%", a_ns > 0 ? 100.0 * (b_ns - a_ns) / a_ns : 0.0);
  std::string line = "A run " + std::to_string(a);
  if (a != source) line += " (run " + std::to_string(source) + "'s schedule)";
  return line + " " + micros(a_ns) + ", B run " + std::to_string(b) + " " + micros(b_ns) +
         " a step (" + change + "), simulated under " + c.label;
}

// The graph of the current run to run a pipeline on: the module stored with the run.
GraphSource run_source(const StudioState& s) {
  GraphSource g;
  g.trace_path = s.trace_path;
  g.run = s.run;
  return g;
}

void keep_module(PipelineViewState& p, int64_t run, std::shared_ptr<const Module> m) {
  p.modules[run] = std::move(m);
  while (p.modules.size() > PipelineViewState::kKeptModules) {
    auto oldest = p.modules.begin();
    if (oldest->first == p.session_run) ++oldest;
    p.modules.erase(oldest);
  }
}

// Makes `run` current, compared with `compare` as A (the old run; the new one, `run`,
// is B), keeping the selected task selected.
void show_run(StudioState& s, int64_t run, int64_t compare) {
  TaskId task = -1;
  int32_t step = 0;
  if (s.model && s.selection.exec >= 0) {
    task = s.model->execution(s.selection.exec).task;
    step = s.model->execution(s.selection.exec).step;
  }
  refresh_runs(s);
  if (!select_run(s, run)) return;
  s.compare_run = compare != run ? compare : -1;
  s.compare_current_is_b = s.compare_run >= 0;
  if (task >= 0) select_execution(s, s.model->find(task, step));
}

// An edit session on run `run` from a job's result (simulated under `costs`), whose edits
// are compared with run `base` (-1: its schedule is stored with the first edit).
void start_session(PipelineViewState& p, int64_t run, const RunnerResult& r, const JobCosts& costs,
                   int64_t base) {
  p.editor = std::make_unique<ScheduleEditor>(*r.module, simulation_costs(r.module->machine, costs.path),
                                              r.steps, r.executions);
  p.session_run = run;
  p.session_model = r.model;
  p.session_costs = costs;
  p.session_costs.calibrate = false;  // fitted by now
  p.session_base = base;
  p.session_module = r.module;
  p.session_runs = {run};
  p.stored.clear();
  if (base >= 0) {
    p.stored[""] = base;
    if (base != run) p.session_runs.push_back(base);
  }
  p.store_pending = false;
  p.edit_message.clear();
  p.edit_refused = false;
}

// A kept edit that could not be stored as a run: it stays in the session (Save .mpk
// writes it), and the status line says so.
void store_failed(StudioState& s, const std::string& why) {
  PipelineViewState& p = s.pipeline;
  p.job_message = "the edit is kept in the session (Save .mpk writes it) but could not be stored as a run: " + why;
  p.job_failed = true;
  p.edit_message = p.job_message;
  p.edit_refused = true;
  set_status(s, p.job_message, true);
}

void start_store(StudioState& s) {
  PipelineViewState& p = s.pipeline;
  p.store_pending = false;
  if (!p.editor) return;
  const std::string moves = p.editor->moves();
  if (auto it = p.stored.find(moves); it != p.stored.end()) {
    if (s.run != it->second) show_run(s, it->second, p.session_base);
    return;
  }
  if (moves.empty()) {  // every edit undone, none stored: back to the session's run
    if (s.run != p.session_run) show_run(s, p.session_run, -1);
    return;
  }
  PipelineRequest r;
  try {
    r.trace_path = prepare_store(s);
  } catch (const Error& e) {
    store_failed(s, e.what());
    return;
  }
  r.source.module = std::make_shared<const Module>(p.editor->module());
  r.steps = p.editor->steps();
  r.costs_path = p.session_costs.path;
  r.baseline = p.session_base < 0;
  r.baseline_module = p.session_module;
  r.baseline_note = "studio: run " + std::to_string(p.session_run) +
                    "'s schedule, simulated to compare hand edits with";
  r.model = p.session_model;
  r.note = "studio: hand edits of run " + std::to_string(p.session_run);
  const Schedule original = p.editor->original_schedule();
  r.finish = [original, moves](Module& m) { pin_schedule(m, original, moves); };
  try {
    p.runner.start(std::move(r));
  } catch (const Error& e) {
    store_failed(s, e.what());
    return;
  }
  p.job = PipelineJob::kStoreEdit;
  p.job_costs = p.session_costs;
  p.job_moves = moves;
  p.job_base_run = s.run;
}

void take_result(StudioState& s, PipelineJob job, RunnerResult r) {
  PipelineViewState& p = s.pipeline;
  const std::string note = r.note;
  char secs[32];
  std::snprintf(secs, sizeof secs, "%.2f s", r.total_s);
  if (p.job_costs.calibrate) p.calibrated[p.job_base_run] = p.job_costs.path;
  switch (job) {
    case PipelineJob::kApply: {
      int64_t a = p.job_compare;
      double a_ns = step_ns_of(s, a);
      if (r.baseline_run >= 0) {
        a = r.baseline_run;
        a_ns = r.baseline_step_ns;
        p.baselines[baseline_key(p.job_base_run, p.job_costs, r.steps)] = a;
      }
      keep_module(p, r.run, r.module);
      p.job_message = comparison_line(a, p.job_base_run, a_ns, r.run, r.step_ns, p.job_costs) +
                      "; ready in " + secs;
      start_session(p, r.run, r, p.job_costs, r.run);
      show_run(s, r.run, a);
      s.view = View::kCompare;
      s.view_changed = true;
      break;
    }
    case PipelineJob::kLoadSession:
      if (s.run != p.job_base_run) break;  // the user moved on; a new session loads
      start_session(p, p.job_base_run, r, p.job_costs,
                    compared_run(s, p.job_base_run, p.job_costs, r.steps));
      p.job_message = "editing run " + std::to_string(p.job_base_run) + ", simulated under " +
                      p.job_costs.label + " (loaded in " + secs + ")";
      break;
    case PipelineJob::kStoreEdit:
      if (r.baseline_run >= 0) {
        p.session_base = r.baseline_run;
        p.stored[""] = r.baseline_run;
        p.session_runs.push_back(r.baseline_run);
        p.baselines[baseline_key(p.session_run, p.session_costs, r.steps)] = r.baseline_run;
      }
      p.stored[p.job_moves] = r.run;
      p.session_runs.push_back(r.run);
      keep_module(p, r.run, r.module);
      p.job_message = "edited schedule stored as run " + std::to_string(r.run) + " in " + secs + ": " +
                      comparison_line(p.session_base, p.session_run,
                                      r.baseline_run >= 0 ? r.baseline_step_ns : step_ns_of(s, p.session_base),
                                      r.run, r.step_ns, p.session_costs);
      if (p.editor && p.editor->moves() == p.job_moves)
        show_run(s, r.run, p.session_base);
      else
        p.store_pending = true;  // edited again meanwhile
      break;
    case PipelineJob::kNone:
      break;
  }
  if (!note.empty() && !p.rebuilt_noted) {  // once per trace
    set_status(s, note, false);
    p.rebuilt_noted = true;
  }
}

EditOutcome no_session(const StudioState& s) {
  const PipelineViewState& p = s.pipeline;
  const bool loading = p.job == PipelineJob::kLoadSession && p.job_base_run == s.run;
  return {false, "refused: no edit session for run " + std::to_string(s.run) + " yet (" +
                     (loading ? "its graph is loading; try again in a moment"
                              : "the pipeline view, Alt+arrows or Alt+drag load one") +
                     ")"};
}

EditOutcome after_edit(StudioState& s, EditOutcome out) {
  PipelineViewState& p = s.pipeline;
  p.edit_message = out.message;
  p.edit_refused = !out.accepted;
  set_status(s, out.message, !out.accepted);
  if (out.accepted && p.auto_store) p.store_pending = true;
  return out;
}

}  // namespace

void set_pipeline_text(PipelineViewState& ps, std::string text) {
  ps.text = std::move(text);
  try {
    ps.entries = parse_pipeline(ps.text);
    ps.text_error.clear();
  } catch (const Error& e) {
    ps.text_error = e.what();
  }
}

void set_pipeline_option(PipelineViewState& ps, size_t index, const std::string& key,
                         const std::optional<std::string>& value) {
  if (index >= ps.entries.size()) return;
  PipelineEntry& e = ps.entries[index];
  if (value)
    e.options[key] = *value;
  else
    e.options.erase(key);
  const std::vector<PassOptionInfo> shown = entry_options(e);
  for (auto it = e.options.begin(); it != e.options.end();) {
    const bool known = std::any_of(shown.begin(), shown.end(),
                                   [&](const PassOptionInfo& o) { return o.name == it->first; });
    it = known ? std::next(it) : e.options.erase(it);
  }
  ps.text = print_pipeline(ps.entries);
  ps.text_error.clear();
  ps.text_edited = true;
}

void poll_pipeline(StudioState& s) {
  track_trace(s);
  PipelineViewState& p = s.pipeline;
  const RunnerProgress progress = p.runner.progress();
  if (p.job != PipelineJob::kNone && !progress.busy()) {
    const PipelineJob job = p.job;
    p.job = PipelineJob::kNone;
    p.job_failed = progress.stage == RunnerStage::kFailed;
    if (progress.stage == RunnerStage::kDone) {
      if (std::optional<RunnerResult> r = p.runner.take_result())
        take_result(s, job, std::move(*r));
    } else if (p.job_failed && job == PipelineJob::kStoreEdit) {
      store_failed(s, progress.error);
    } else if (p.job_failed) {
      p.job_message = progress.text();
      if (job == PipelineJob::kLoadSession) p.session_failed_run = p.job_base_run;
    } else {
      p.job_message = "cancelled";
    }
  }
  if (p.store_pending && p.job == PipelineJob::kNone && !p.runner.busy()) start_store(s);
}

bool apply_pipeline(StudioState& s) {
  track_trace(s);
  PipelineViewState& p = s.pipeline;
  if (!s.reader || s.run < 0) {
    p.job_message = "nothing is open";
    return false;
  }
  if (p.runner.busy()) {
    p.job_message = "a job is running; cancel it first";
    return false;
  }
  set_pipeline_text(p, p.text);
  if (!p.text_error.empty()) return false;
  const RunRecord* record = find_run(s, s.run);
  if (!record) {
    p.job_message = "run " + std::to_string(s.run) + " is not in the run list";
    return false;
  }
  const RunRecord source = *record;
  PipelineRequest r;
  r.steps = job_steps(s);
  JobCosts costs;
  try {
    costs = resolve_costs(p.costs, source, p.calibrated, s.input_path);
    r.trace_path = prepare_store(s);  // may switch to the side file (same run ids)
  } catch (const Error& e) {
    p.job_message = e.what();
    p.job_failed = true;
    return false;
  }
  r.source = run_source(s);
  r.pipeline = p.text;
  r.costs_path = costs.path;
  r.calibrate = costs.calibrate;
  const int64_t compare = compared_run(s, s.run, costs, r.steps);
  r.baseline = compare < 0;
  r.baseline_note = "studio: run " + std::to_string(s.run) + "'s schedule, simulated to compare with";
  r.note = "studio: pipeline applied to run " + std::to_string(s.run);
  try {
    p.runner.start(std::move(r));
  } catch (const Error& e) {
    p.text_error = e.what();
    return false;
  }
  p.job = PipelineJob::kApply;
  p.job_base_run = s.run;
  p.job_costs = costs;
  p.job_compare = compare;
  p.job_failed = false;
  p.job_message.clear();
  return true;
}

void cancel_pipeline(StudioState& s) { s.pipeline.runner.cancel(); }

void set_cost_choice(StudioState& s, CostChoice choice) {
  PipelineViewState& p = s.pipeline;
  p.costs = std::move(choice);
  p.session_failed_run = -1;
  if (p.editor && p.editor->applied() == 0) drop_edit_session(s);  // reloads under the new costs
}

bool begin_edit_session(StudioState& s) {
  track_trace(s);
  PipelineViewState& p = s.pipeline;
  if (!s.reader || s.run < 0 || has_edit_session(s) || p.runner.busy() ||
      p.job != PipelineJob::kNone || p.session_failed_run == s.run)
    return false;
  if (p.editor && p.editor->applied() > 0) return false;  // the panel asks first
  const RunRecord* record = find_run(s, s.run);
  PipelineRequest r;
  JobCosts costs;
  try {
    if (!record) throw Error("run " + std::to_string(s.run) + " is not in the run list");
    costs = resolve_costs(p.costs, *record, p.calibrated, s.input_path);
  } catch (const Error& e) {
    p.job_message = e.what();
    p.session_failed_run = s.run;
    return false;
  }
  if (auto it = p.modules.find(s.run); it != p.modules.end()) {
    r.source.module = it->second;
    r.model = record->model;
  } else {
    r.source = run_source(s);
  }
  r.steps = job_steps(s);
  r.costs_path = costs.path;
  r.calibrate = costs.calibrate;
  try {
    p.runner.start(std::move(r));
  } catch (const Error& e) {
    p.job_message = e.what();
    p.session_failed_run = s.run;
    return false;
  }
  p.job = PipelineJob::kLoadSession;
  p.job_base_run = s.run;
  p.job_costs = costs;
  return true;
}

bool has_edit_session(const StudioState& s) {
  const PipelineViewState& p = s.pipeline;
  return p.editor && s.run >= 0 &&
         std::find(p.session_runs.begin(), p.session_runs.end(), s.run) != p.session_runs.end();
}

void drop_edit_session(StudioState& s) {
  PipelineViewState& p = s.pipeline;
  p.editor.reset();
  p.session_run = -1;
  p.session_base = -1;
  p.session_module.reset();
  p.session_runs.clear();
  p.stored.clear();
  p.store_pending = false;
  p.edit_message.clear();
}

TaskId selected_task(const StudioState& s) {
  if (!s.model || s.selection.exec < 0 ||
      s.selection.exec >= static_cast<int64_t>(s.model->executions().size()))
    return -1;
  return s.model->execution(s.selection.exec).task;
}

EditOutcome edit_move(StudioState& s, const std::vector<TaskId>& tasks, int32_t worker,
                      TaskId after) {
  if (!has_edit_session(s)) return after_edit(s, no_session(s));
  return after_edit(s, s.pipeline.editor->move(tasks, worker, after));
}

EditOutcome edit_move_to_worker(StudioState& s, TaskId t, int32_t worker) {
  if (!has_edit_session(s)) return after_edit(s, no_session(s));
  return after_edit(s, s.pipeline.editor->move_to_worker(t, worker));
}

EditOutcome edit_shift(StudioState& s, TaskId t, int32_t delta) {
  if (!has_edit_session(s)) return after_edit(s, no_session(s));
  return after_edit(s, s.pipeline.editor->shift(t, delta));
}

bool edit_undo(StudioState& s) {
  PipelineViewState& p = s.pipeline;
  if (!has_edit_session(s) || !p.editor->undo()) return false;
  after_edit(s, {true, "undone: " + p.editor->edits()[p.editor->applied()].label});
  return true;
}

bool edit_redo(StudioState& s) {
  PipelineViewState& p = s.pipeline;
  if (!has_edit_session(s) || !p.editor->redo()) return false;
  after_edit(s, {true, "redone: " + p.editor->edits()[p.editor->applied() - 1].label});
  return true;
}

bool save_edits(StudioState& s, const std::string& path) {
  PipelineViewState& p = s.pipeline;
  p.save_failed = true;
  if (!p.editor) {
    p.save_message = "no edit session to save";
    return false;
  }
  try {
    p.editor->save(path);
  } catch (const Error& e) {
    p.save_message = e.what();
    return false;
  }
  p.save_failed = false;
  p.save_message = "saved " + path + " (" + std::to_string(p.editor->moves().size()) +
                   " moves); run it: mpk run --graph " + path + " --backend sim|cpu|gpu";
  return true;
}

}  // namespace mpk::studio
