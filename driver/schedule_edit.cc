// ScheduleEditor: moves checked by the deadlock check, re-simulation, undo/redo, and the
// edited module as a pinned schedule over the original one.
#include "driver/schedule_edit.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "ir/deadlock.h"
#include "ir/error.h"
#include "ir/task_graph_index.h"
#include "ir/verifier.h"
#include "passes/pipeline.h"
#include "passes/policies/pinned.h"
#include "passes/registry.h"
#include "traces/simulator.h"

namespace mpk {
namespace {

using WorkerSnapshot = std::vector<std::pair<int32_t, std::vector<TaskId>>>;

WorkerSnapshot snapshot(const Schedule& s, const std::set<int32_t>& workers) {
  WorkerSnapshot out;
  for (int32_t w : workers) out.emplace_back(w, s.workers[w]);
  return out;
}

std::string micros(int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f us", static_cast<double>(ns) * 1e-3);
  return buf;
}

}  // namespace

void pin_schedule(Module& m, const Schedule& original, const std::string& moves) {
  const Schedule edited = m.graph.schedule;
  const PassOptions options = pinned_options(original, parse_moves(moves));
  try {
    const PassResult r = find_pass("assign-sm")->create(options)->run(m);
    if (r.error) throw Error(*r.error);
  } catch (const Error& e) {
    m.graph.schedule = edited;
    throw Error("the edits cannot be replayed on the schedule's policy '" + original.policy +
                "': " + e.what());
  }
  if (m.graph.schedule.workers != edited.workers) {
    m.graph.schedule = edited;
    throw Error("policy '" + original.policy + "' does not reproduce the schedule the edits "
                "started from (made by another version or machine model?), so the edits "
                "cannot be recorded as pinned moves");
  }
  Pipeline pipeline;
  if (!m.provenance.pipeline.empty()) pipeline = parse_pipeline(m.provenance.pipeline);
  auto last = std::find_if(pipeline.rbegin(), pipeline.rend(),
                           [](const PipelineEntry& e) { return e.pass == "assign-sm"; });
  if (last != pipeline.rend())
    last->options = options;
  else
    pipeline.push_back({"assign-sm", options});
  m.provenance.pipeline = print_pipeline(pipeline);
  m.provenance.tool_version = tool_version();
}

struct ScheduleEditor::Lists {
  Lists(const TaskGraph& g, const std::vector<std::vector<TaskId>>& lists)
      : graph(g), workers(std::make_unique<WorkerLists>(graph, lists)) {}
  TaskGraphIndex graph;
  std::unique_ptr<WorkerLists> workers;  // over `graph`
};

ScheduleEditor::ScheduleEditor(Module scheduled, const CostParams& costs, int32_t steps,
                               std::vector<Execution> simulated)
    : module_(std::move(scheduled)), original_(module_.graph.schedule), costs_(costs),
      steps_(steps) {
  if (module_.graph.schedule.empty()) throw Error("the module has no schedule to edit");
  if (steps_ < 1) throw Error("an edit session simulates at least 1 step");
  const std::vector<Diagnostic> d = verify_schedule(module_);
  if (!d.empty()) throw Error("the schedule cannot be edited: " + d.front().rule + ": " +
                              d.front().message);
  reindex();
  for (TaskId t = 0; t < num_tasks(); ++t)
    if (lists_->workers->worker_of(t) < 0) throw Error("task " + std::to_string(t) + " is not scheduled");
  execs_ = std::move(simulated);
  if (execs_.empty()) {
    resimulate();
  } else {
    start0_.assign(module_.graph.tasks.size(), 0);
    for (const Execution& x : execs_) {
      duration_ns_ = std::max(duration_ns_, x.end_ns);
      if (x.step == 0) start0_[x.task] = x.start_ns;
    }
  }
  original_duration_ns_ = duration_ns_;
}

ScheduleEditor::~ScheduleEditor() = default;

int32_t ScheduleEditor::worker_of(TaskId t) const { return lists_->workers->worker_of(t); }
int32_t ScheduleEditor::position_of(TaskId t) const { return lists_->workers->position_of(t); }

void ScheduleEditor::resimulate() {
  execs_ = simulate(module_, costs_, steps_);
  duration_ns_ = 0;
  start0_.assign(module_.graph.tasks.size(), 0);
  for (const Execution& x : execs_) {
    duration_ns_ = std::max(duration_ns_, x.end_ns);
    if (x.step == 0) start0_[x.task] = x.start_ns;
  }
}

void ScheduleEditor::set_lists(const WorkerSnapshot& lists) {
  for (const auto& [w, list] : lists) module_.graph.schedule.workers[w] = list;
  reindex();
}

void ScheduleEditor::reindex() {
  module_.graph.touch();
  lists_.reset();
  lists_ = std::make_unique<Lists>(module_.graph, module_.graph.schedule.workers);
}

std::string ScheduleEditor::describe(TaskId t) const {
  if (t < 0 || t >= num_tasks()) return "task " + std::to_string(t);
  return describe_task(module_, t);
}

std::string ScheduleEditor::step_change(int64_t before_ns) const {
  char pct[32];
  std::snprintf(pct, sizeof pct, " (%+.1f%%)",
                before_ns > 0 ? 100.0 * static_cast<double>(duration_ns_ - before_ns) /
                                    static_cast<double>(before_ns)
                              : 0.0);
  return "step " + micros(before_ns / steps_) + " -> " + micros(duration_ns_ / steps_) + pct;
}

EditOutcome ScheduleEditor::move(const std::vector<TaskId>& tasks, int32_t worker, TaskId after) {
  const int32_t n = num_tasks();
  WorkerLists& lists = *lists_->workers;
  if (tasks.empty()) return {false, "refused: no task to move"};
  std::string label = tasks.size() == 1 ? describe(tasks[0])
                                         : std::to_string(tasks.size()) + " tasks";
  label += " to worker " + std::to_string(worker) +
           (after < 0 ? std::string(", first") : " after " + describe(after));
  auto refuse = [&](const std::string& why) {
    return EditOutcome{false, "refused: " + label + ": " + why};
  };
  if (worker < 0 || worker >= lists.num_workers())
    return refuse("worker " + std::to_string(worker) + " does not exist (the schedule has " +
                  std::to_string(lists.num_workers()) + " workers)");
  std::set<int32_t> touched = {worker};
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (tasks[i] < 0 || tasks[i] >= n) return refuse(describe(tasks[i]) + " does not exist");
    if (std::find(tasks.begin(), tasks.begin() + i, tasks[i]) != tasks.begin() + i)
      return refuse(describe(tasks[i]) + " is listed twice");
    if (tasks[i] == after) return refuse("the anchor is one of the tasks moved");
    touched.insert(lists.worker_of(tasks[i]));
  }
  const WorkerSnapshot before = snapshot(module_.graph.schedule, touched);
  ScheduleEdit edit;
  edit.label = label;
  for (size_t i = 0; i < tasks.size(); ++i) {
    const PinnedMove m{tasks[i], worker, i == 0 ? after : tasks[i - 1]};
    const std::string problem = lists.apply_unchecked(m);
    if (!problem.empty()) {
      set_lists(before);
      return refuse(problem);
    }
    // The lists before this move could not deadlock: a cycle now passes through m.task.
    const std::vector<CycleLink> cycle = lists.cycle_through(m.task);
    if (!cycle.empty()) {
      const std::string why = "it can deadlock (schedule.deadlock), a cycle of worker order and events: " +
                              print_cycle(cycle, [&](TaskId t) {
                                return describe(t) + " on worker " + std::to_string(lists.worker_of(t));
                              });
      set_lists(before);
      return refuse(why);
    }
    edit.moves += (edit.moves.empty() ? "" : ";") + print_move(m);
  }
  for (int32_t w : touched) module_.graph.schedule.workers[w] = lists.lists()[w];
  reindex();
  edit.after = snapshot(module_.graph.schedule, touched);
  if (edit.after == before) return {false, "nothing to change: " + label + " is where it is"};
  edit.before = before;
  const int64_t before_ns = duration_ns_;
  resimulate();
  edit.duration_ns = duration_ns_;
  edits_.resize(applied_);
  edits_.push_back(std::move(edit));
  ++applied_;
  return {true, "moved " + label + ": " + step_change(before_ns)};
}

EditOutcome ScheduleEditor::move_to_worker(TaskId t, int32_t worker) {
  if (t < 0 || t >= num_tasks())
    return {false, "refused: " + describe(t) + " does not exist"};
  const WorkerLists& lists = *lists_->workers;
  if (worker < 0 || worker >= lists.num_workers())
    return {false, "refused: there is no worker " + std::to_string(worker) + " to move " +
                       describe(t) + " to"};
  if (worker == lists.worker_of(t))
    return {false, "nothing to change: " + describe(t) + " is on worker " + std::to_string(worker)};
  TaskId anchor = -1;
  for (TaskId u : lists.lists()[worker])
    if (start0_[u] < start0_[t]) anchor = u;
  return move({t}, worker, anchor);
}

EditOutcome ScheduleEditor::shift(TaskId t, int32_t delta) {
  if (t < 0 || t >= num_tasks())
    return {false, "refused: " + describe(t) + " does not exist"};
  const WorkerLists& lists = *lists_->workers;
  const int32_t w = lists.worker_of(t);
  const std::vector<TaskId>& list = lists.lists()[w];
  const int32_t p = lists.position_of(t);
  const int32_t q = p + delta;
  if (delta == 0) return {false, "nothing to change: a shift by 0 places"};
  if (q < 0 || q >= static_cast<int32_t>(list.size()))
    return {false, "refused: " + describe(t) + " is already " + (delta < 0 ? "first" : "last") +
                       " on worker " + std::to_string(w)};
  // The anchor in the list without t: the task that ends up right before it.
  const TaskId anchor = q == 0 ? -1 : q < p ? list[q - 1] : list[q];
  return move({t}, w, anchor);
}

bool ScheduleEditor::undo() {
  if (!can_undo()) return false;
  set_lists(edits_[--applied_].before);
  resimulate();
  return true;
}

bool ScheduleEditor::redo() {
  if (!can_redo()) return false;
  set_lists(edits_[applied_++].after);
  resimulate();
  return true;
}

std::string ScheduleEditor::moves() const {
  std::string out;
  for (size_t i = 0; i < applied_; ++i) out += (out.empty() ? "" : ";") + edits_[i].moves;
  return out;
}

Module ScheduleEditor::edited_module() const {
  Module m = module_;
  const std::string all = moves();
  if (!all.empty()) pin_schedule(m, original_, all);
  return m;
}

void ScheduleEditor::save(const std::string& path, Format format) const {
  save_module(edited_module(), path, format);
}

}  // namespace mpk
