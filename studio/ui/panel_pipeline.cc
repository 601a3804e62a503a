// The pipeline view: on the left the current run's pipeline as text and as widgets
// built from the passes' and policies' declared options (a policy is a combo, then that
// policy's own parameters), Apply (runs off the UI thread with progress, then opens the
// new run as B in the compare view, A being the run's own schedule simulated under the
// same cost model) and Cancel, the cost model (the run's own: calibrated for a GPU run;
// the machine model; a cost file) and where new runs are stored; on the right the hand
// edits of the run's schedule: the selected task and its moves (Alt+Left/Right: a place
// earlier/later; Alt+Up/Down: the previous/next worker), a move form, the edit list with
// Undo/Redo (Ctrl+Z/Ctrl+Y), the moves as pinned-policy text, and Save .mpk.
// State and logic: studio/model/pipeline_state.h.
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "imgui.h"
#include "imgui_stdlib.h"
#include "ir/error.h"
#include "ir/verifier.h"
#include "studio/model/panel_registry.h"
#include "studio/ui/panels.h"
#include "studio/model/store_target.h"

namespace mpk::studio {
namespace {

const ImVec4 kRed(0.95f, 0.40f, 0.35f, 1.0f);
const ImVec4 kGreen(0.45f, 0.85f, 0.45f, 1.0f);

void remember(PipelineViewState& p, const char* name) {
  const ImVec2 a = ImGui::GetItemRectMin(), b = ImGui::GetItemRectMax();
  p.buttons[name] = {(a.x + b.x) / 2, (a.y + b.y) / 2};
}

std::string micros(int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f us", static_cast<double>(ns) * 1e-3);
  return buf;
}

// A first value for an option switched from its default to a set value.
std::string initial_value(const PassOptionInfo& o) {
  if (!o.default_value.empty()) return o.default_value;
  switch (o.kind) {
    case OptionKind::kChoice: return o.choices.empty() ? "" : o.choices.front();
    case OptionKind::kBool: return "true";
    case OptionKind::kInt: {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.0f", o.min ? *o.min : 1.0);
      return buf;
    }
    case OptionKind::kFloat: return o.min ? std::to_string(*o.min) : "0";
    case OptionKind::kString: return "";
  }
  return "";
}

// One option's row: a checkbox (set / default) and a widget by kind. Returns the new
// value when the user changed it (nullopt inside: back to the default).
std::optional<std::optional<std::string>> option_row(const PassOptionInfo& o,
                                                     const PassOptions& options) {
  std::optional<std::optional<std::string>> change;
  ImGui::PushID(o.name.c_str());
  auto it = options.find(o.name);
  std::string value = it != options.end() ? it->second : "";
  if (o.kind == OptionKind::kString) {
    ImGui::SetNextItemWidth(260);
    if (ImGui::InputText(o.name.c_str(), &value))
      change = value.empty() ? std::nullopt : std::optional<std::string>(value);
  } else {
    bool set = it != options.end();
    if (ImGui::Checkbox(o.name.c_str(), &set))
      change = set ? std::optional<std::string>(initial_value(o)) : std::nullopt;
    ImGui::SameLine(200);
    ImGui::SetNextItemWidth(180);
    if (!set) {
      ImGui::TextDisabled("default: %s",
                          o.default_value.empty() ? "computed" : o.default_value.c_str());
    } else if (o.kind == OptionKind::kChoice) {
      if (ImGui::BeginCombo("##value", value.c_str())) {
        for (const std::string& c : o.choices)
          if (ImGui::Selectable(c.c_str(), c == value)) change = std::optional<std::string>(c);
        ImGui::EndCombo();
      }
    } else if (o.kind == OptionKind::kBool) {
      bool b = value == "true" || value == "1";
      if (ImGui::Checkbox("##value", &b)) change = std::optional<std::string>(b ? "true" : "false");
    } else if (o.kind == OptionKind::kInt) {
      long long v = value == "auto" ? 0 : std::atoll(value.c_str());
      if (ImGui::InputScalar("##value", ImGuiDataType_S64, &v))
        change = std::optional<std::string>(std::to_string(v));
    } else {
      double v = std::strtod(value.c_str(), nullptr);
      if (ImGui::InputDouble("##value", &v, 0, 0, "%g")) {
        char buf[40];
        std::snprintf(buf, sizeof buf, "%.17g", v);
        change = std::optional<std::string>(buf);
      }
    }
  }
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s (%s)", o.help.c_str(), name_of(o.kind));
  if (it != options.end()) {
    const std::string problem = option_value_problem(o, it->second);
    if (!problem.empty()) ImGui::TextColored(kRed, "%s", problem.c_str());
  }
  ImGui::PopID();
  return change;
}

void draw_progress(StudioState& s) {
  PipelineViewState& p = s.pipeline;
  const RunnerProgress pr = p.runner.progress();
  if (pr.busy()) {
    float f = 0.05f;
    if (pr.stage == RunnerStage::kPasses && pr.num_passes > 0)
      f = 0.1f + 0.6f * static_cast<float>(pr.pass - 1) / static_cast<float>(pr.num_passes);
    if (pr.stage == RunnerStage::kSimulating) f = 0.75f;
    if (pr.stage == RunnerStage::kStoring) f = 0.9f;
    ImGui::ProgressBar(f, ImVec2(-90, 0), pr.text().c_str());
    ImGui::SameLine();
    if (ImGui::Button("Cancel")) cancel_pipeline(s);
    remember(p, "cancel");
  } else if (!p.job_message.empty()) {
    ImGui::TextColored(p.job_failed ? kRed : kGreen, "%s", p.job_message.c_str());
  }
}

// The cost model of Apply and edit sessions, and what it resolves to for this run.
void draw_cost_choice(StudioState& s, const RunRecord* run) {
  PipelineViewState& p = s.pipeline;
  static const char* const kChoices[] = {"the run's own (calibrated from a GPU run)", "the machine model",
                                         "a cost file"};
  int choice = static_cast<int>(p.costs.source);
  ImGui::SetNextItemWidth(300);
  if (ImGui::Combo("cost model", &choice, kChoices, 3)) {
    CostChoice c = p.costs;
    c.source = static_cast<CostSource>(choice);
    set_cost_choice(s, c);
  }
  if (p.costs.source == CostSource::kFile) {
    std::string file = p.costs.file;
    ImGui::SetNextItemWidth(300);
    if (ImGui::InputText("cost file (JSON, e.g. from mpk calibrate)", &file)) set_cost_choice(s, {CostSource::kFile, file});
  }
  if (!run) return;
  try {
    ImGui::TextDisabled("simulated under %s", resolve_costs(p.costs, *run, p.calibrated, s.input_path).label.c_str());
  } catch (const Error& e) {
    ImGui::TextColored(kRed, "%s", e.what());
  }
}

// Where new runs go, and the choice to write into the opened file.
void draw_store_target(StudioState& s) {
  ImGui::BeginDisabled(s.trace_is_temporary || s.trace_is_side);
  ImGui::Checkbox("store new runs in the opened file", &s.write_into_input);
  ImGui::EndDisabled();
  ImGui::SameLine();
  ImGui::TextDisabled("(%s)", store_description(s).c_str());
}

void draw_pipeline_side(StudioState& s) {
  PipelineViewState& p = s.pipeline;
  const RunRecord* run = find_run(s, s.run);
  if (run && p.text_run != s.run && !p.text_edited) {
    set_pipeline_text(p, run->pipeline);
    p.text_run = s.run;
  }
  ImGui::Text("Pipeline (run %lld: %s)", static_cast<long long>(s.run),
              run ? run->policy.c_str() : "?");
  ImGui::SetNextItemWidth(-1);
  if (ImGui::InputText("##pipeline", &p.text)) {
    set_pipeline_text(p, p.text);
    p.text_edited = true;
  }
  if (!p.text_error.empty()) ImGui::TextColored(kRed, "%s", p.text_error.c_str());
  ImGui::SetNextItemWidth(120);
  int steps = p.steps;
  if (ImGui::InputInt("steps (0: the run's)", &steps)) p.steps = std::max(0, steps);
  draw_cost_choice(s, run);
  draw_store_target(s);

  const bool busy = p.runner.busy();
  ImGui::BeginDisabled(busy || !p.text_error.empty());
  if (ImGui::Button("Apply")) apply_pipeline(s);
  remember(p, "apply");
  ImGui::EndDisabled();
  ImGui::SameLine();
  if (ImGui::Button("Reset") && run) {
    set_pipeline_text(p, run->pipeline);
    p.text_edited = false;
  }
  draw_progress(s);
  ImGui::Separator();

  if (!p.text_error.empty()) return;
  for (size_t i = 0; i < p.entries.size(); ++i) {
    ImGui::PushID(static_cast<int>(i));
    const std::string title = std::to_string(i + 1) + ". " + p.entries[i].pass;
    if (ImGui::TreeNodeEx(title.c_str(), ImGuiTreeNodeFlags_DefaultOpen)) {
      std::optional<std::pair<std::string, std::optional<std::string>>> change;
      for (const PassOptionInfo& o : entry_options(p.entries[i]))
        if (auto c = option_row(o, p.entries[i].options)) change = {{o.name, *c}};
      if (change) set_pipeline_option(p, i, change->first, change->second);
      ImGui::TreePop();
    }
    ImGui::PopID();
  }
}

void draw_edit_list(StudioState& s) {
  PipelineViewState& p = s.pipeline;
  const ScheduleEditor& e = *p.editor;
  ImGui::BeginDisabled(!e.can_undo());
  if (ImGui::Button("Undo (Ctrl+Z)")) edit_undo(s);
  remember(p, "undo");
  ImGui::EndDisabled();
  ImGui::SameLine();
  ImGui::BeginDisabled(!e.can_redo());
  if (ImGui::Button("Redo (Ctrl+Y)")) edit_redo(s);
  remember(p, "redo");
  ImGui::EndDisabled();
  ImGui::SameLine();
  ImGui::Checkbox("store each edit as a run", &p.auto_store);
  const ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV |
                                ImGuiTableFlags_ScrollY | ImGuiTableFlags_SizingStretchProp;
  const float rows = static_cast<float>(std::min<size_t>(e.edits().size(), 8) + 1);
  if (ImGui::BeginTable("edits", 3, flags,
                        ImVec2(0, rows * ImGui::GetTextLineHeightWithSpacing() + 6))) {
    ImGui::TableSetupColumn("#", ImGuiTableColumnFlags_WidthFixed, 28);
    ImGui::TableSetupColumn("edit", ImGuiTableColumnFlags_WidthStretch);
    ImGui::TableSetupColumn("step", ImGuiTableColumnFlags_WidthFixed, 80);
    ImGui::TableHeadersRow();
    for (size_t i = 0; i < e.edits().size(); ++i) {
      const ScheduleEdit& edit = e.edits()[i];
      ImGui::TableNextRow();
      ImGui::BeginDisabled(i >= e.applied());
      ImGui::TableNextColumn();
      ImGui::Text("%zu", i + 1);
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(edit.label.c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(micros(edit.duration_ns / e.steps()).c_str());
      ImGui::EndDisabled();
    }
    ImGui::EndTable();
  }
  const std::string moves = e.moves();
  ImGui::TextWrapped("moves: %s", moves.empty() ? "(none)" : moves.c_str());
}

void draw_edit_side(StudioState& s) {
  PipelineViewState& p = s.pipeline;
  if (!has_edit_session(s)) {
    if (p.editor && p.editor->applied() > 0) {
      ImGui::TextWrapped("Editing run %lld (%zu edits, not saved). The current run is another.",
                         static_cast<long long>(p.session_run), p.editor->applied());
      if (ImGui::Button("Drop those edits and edit this run")) drop_edit_session(s);
      remember(p, "edit-run");
      return;
    }
    if (p.session_failed_run == s.run) {
      ImGui::TextColored(kRed, "This run's graph cannot be edited: %s", p.job_message.c_str());
      return;
    }
    begin_edit_session(s);
    ImGui::TextDisabled("Loading run %lld's graph for hand edits...",
                        static_cast<long long>(s.run));
    return;
  }
  const ScheduleEditor& e = *p.editor;
  ImGui::Text("Hand edits of run %lld: step %s (was %s), simulated", static_cast<long long>(p.session_run),
              micros(e.duration_ns() / e.steps()).c_str(),
              micros(e.original_duration_ns() / e.steps()).c_str());
  ImGui::TextDisabled("under %s; stored edits are compared with run %s", p.session_costs.label.c_str(),
                      p.session_base >= 0 ? std::to_string(p.session_base).c_str()
                                          : "(its schedule, stored with the first edit)");
  const TaskId t = selected_task(s);
  handle_edit_keys(s);
  if (t < 0) {
    ImGui::TextDisabled("Select a task in the timeline to move it.");
  } else {
    const int32_t w = e.worker_of(t);
    ImGui::Text("%s on worker %d, place %d of %zu", describe_task(e.module(), t).c_str(), w,
                e.position_of(t) + 1, e.module().graph.schedule.workers[w].size());
    if (ImGui::Button("earlier (Alt+Left)")) edit_shift(s, t, -1);
    ImGui::SameLine();
    if (ImGui::Button("later (Alt+Right)")) edit_shift(s, t, 1);
    ImGui::SameLine();
    if (ImGui::Button("previous worker (Alt+Up)")) edit_move_to_worker(s, t, w - 1);
    ImGui::SameLine();
    if (ImGui::Button("next worker (Alt+Down)")) edit_move_to_worker(s, t, w + 1);
  }
  ImGui::SetNextItemWidth(90);
  ImGui::InputInt("task", &p.form_task, 0);
  ImGui::SameLine();
  ImGui::SetNextItemWidth(90);
  ImGui::InputInt("to worker", &p.form_worker, 0);
  ImGui::SameLine();
  ImGui::SetNextItemWidth(90);
  ImGui::InputInt("after task (-1: first)", &p.form_after, 0);
  ImGui::SameLine();
  if (ImGui::Button("Move")) edit_move(s, {p.form_task}, p.form_worker, p.form_after);
  remember(p, "move");
  if (!p.edit_message.empty())
    ImGui::TextColored(p.edit_refused ? kRed : kGreen, "%s", p.edit_message.c_str());
  ImGui::Separator();
  draw_edit_list(s);
  ImGui::Separator();
  ImGui::SetNextItemWidth(260);
  ImGui::InputText("##save-path", &p.save_path);
  ImGui::SameLine();
  if (ImGui::Button("Save .mpk")) save_edits(s, p.save_path);
  remember(p, "save");
  if (!p.save_message.empty())
    ImGui::TextColored(p.save_failed ? kRed : kGreen, "%s", p.save_message.c_str());
}

}  // namespace

void handle_edit_keys(StudioState& s) {
  const ImGuiIO& io = ImGui::GetIO();
  if (io.WantTextInput) return;
  if (io.KeyCtrl && ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Z), false)) edit_undo(s);
  if (io.KeyCtrl && ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Y), false)) edit_redo(s);
  const TaskId t = selected_task(s);
  if (!io.KeyAlt || t < 0) return;
  const int arrows[] = {ImGuiKey_LeftArrow, ImGuiKey_RightArrow, ImGuiKey_UpArrow, ImGuiKey_DownArrow};
  bool pressed[4] = {};
  for (int i = 0; i < 4; ++i) pressed[i] = ImGui::IsKeyPressed(ImGui::GetKeyIndex(arrows[i]));
  if (!pressed[0] && !pressed[1] && !pressed[2] && !pressed[3]) return;
  if (!has_edit_session(s)) begin_edit_session(s);  // the edits below refuse until it is in
  const int32_t w = has_edit_session(s) ? s.pipeline.editor->worker_of(t) : 0;
  if (pressed[0]) edit_shift(s, t, -1);
  if (pressed[1]) edit_shift(s, t, 1);
  if (pressed[2]) edit_move_to_worker(s, t, w - 1);
  if (pressed[3]) edit_move_to_worker(s, t, w + 1);
}

static void draw_pipeline_panel(StudioState& s) {
  if (!s.model) {
    ImGui::TextDisabled("Open a trace.db or a scheduled .mpk to run pipelines on it.");
    return;
  }
  const float width = ImGui::GetContentRegionAvail().x;
  ImGui::BeginChild("pipeline", ImVec2(width * 0.45f, 0), true);
  draw_pipeline_side(s);
  ImGui::EndChild();
  ImGui::SameLine();
  ImGui::BeginChild("edits", ImVec2(0, 0), true);
  draw_edit_side(s);
  ImGui::EndChild();
}

MPK_STUDIO_PANEL(pipeline, "Pipeline", 50, draw_pipeline_panel);

}  // namespace mpk::studio
