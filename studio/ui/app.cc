// mpk-studio's options and one frame of the window: menu bar, what is open, the run
// list, a tab per view (only the views whose panel is built in), the current view's
// panel, the status line and the frame-time overlay.
#include "studio/ui/app.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <ctime>

#include "imgui.h"
#include "imgui_stdlib.h"
#include "ir/error.h"
#include "studio/model/panel_registry.h"
#include "studio/ui/panels.h"
#include "studio/ui/timeline_details.h"
#include "studio/model/timeline_layout.h"
#include "studio/ui/timeline_nav.h"

namespace mpk::studio {
namespace {

// The registered views' names: "timeline, stats, compare, graph, pipeline".
std::string view_names(const char* separator) {
  std::string out;
  for (const PanelInfo& p : registered_panels()) out += (out.empty() ? "" : separator) + std::string(p.name);
  return out;
}

int64_t parse_int(const std::string& opt, const std::string& v) {
  try {
    size_t used = 0;
    const long long x = std::stoll(v, &used);
    if (used == v.size() && x >= 0) return x;
  } catch (const std::exception&) {
  }
  throw Error("option " + opt + " needs a non-negative integer, got '" + v + "'");
}

void draw_open_popup(StudioState& s) {
  static std::string path;
  if (ImGui::BeginPopupModal("Open", nullptr, ImGuiWindowFlags_AlwaysAutoResize)) {
    ImGui::TextUnformatted("A trace.db, or a scheduled task graph (.mpk) to simulate:");
    ImGui::SetNextItemWidth(480);
    if (ImGui::IsWindowAppearing()) ImGui::SetKeyboardFocusHere();
    const bool enter = ImGui::InputText("##path", &path, ImGuiInputTextFlags_EnterReturnsTrue);
    if (ImGui::Button("Open") || enter) {
      open_input(s, path);
      ImGui::CloseCurrentPopup();
    }
    ImGui::SameLine();
    if (ImGui::Button("Cancel")) ImGui::CloseCurrentPopup();
    ImGui::EndPopup();
  }
}

void draw_menu(StudioState& s) {
  bool open_dialog = false;
  if (!ImGui::BeginMenuBar()) return;
  if (ImGui::BeginMenu("File")) {
    if (ImGui::MenuItem("Open...")) open_dialog = true;
    if (ImGui::MenuItem("Reload run list", nullptr, false, s.reader != nullptr)) refresh_runs(s);
    ImGui::Separator();
    export_menu_items(s);
    ImGui::Separator();
    if (ImGui::MenuItem("Quit", "Ctrl+Q")) s.quit_requested = true;
    ImGui::EndMenu();
  }
  if (ImGui::BeginMenu("View")) {
    for (const PanelInfo& p : registered_panels())
      if (ImGui::MenuItem(p.title, nullptr, s.view.name == p.name)) {
        s.view = View{p.name};
        s.view_changed = true;
      }
    ImGui::Separator();
    ImGui::MenuItem("Legend", nullptr, &s.timeline.show_legend);
    ImGui::MenuItem("Frame time", "F2", &s.show_frame_time);
    ImGui::EndMenu();
  }
  if (ImGui::BeginMenu("Help")) {
    ImGui::TextUnformatted(
        "Timeline: wheel zooms at the cursor, drag pans, Shift+wheel scrolls the rows.\n"
        "Keys: Left/Right pan, +/- zoom, F fit, Home/End go to the run's start/end,\n"
        "Up/Down scroll the rows, Esc clears the selection, F2 frame time.\n"
        "Click a task to select it: arrows show its producers and consumers;\n"
        "'Why idle?' walks back what made it start when it did.\n"
        "Right-drag picks a time range (Stats and Workers follow it; File exports it).\n"
        "Find: type an operator or task, Enter / F3 next, Shift+F3 previous.\n"
        "Z zooms to the range, the walk or the selection; Filter dims other layers,\n"
        "steps and kinds.\n"
        "\n"
        "Hand edits of the schedule (timeline and pipeline views, selected task):\n"
        "Alt+Left/Right: a place earlier/later on its worker; Alt+Up/Down: the\n"
        "previous/next worker; Ctrl+drag (or Alt+drag, or a drag in edit mode: E)\n"
        "a task onto another row or place moves it there.\n"
        "Ctrl+Z / Ctrl+Y undo / redo. A refused move says why in the status line.");
    ImGui::EndMenu();
  }
  ImGui::EndMenuBar();
  if (open_dialog) ImGui::OpenPopup("Open");
}

void draw_header(StudioState& s) {
  const RunRecord* r = find_run(s, s.run);
  ImGui::TextUnformatted(s.input_path.c_str());
  if (r) {
    ImGui::SameLine();
    ImGui::TextDisabled("|");
    ImGui::SameLine();
    ImGui::Text("run %lld: %s, %s, policy %s, %lld steps, %d workers, %s", static_cast<long long>(r->id),
                r->kind.c_str(), r->model.c_str(), r->policy.c_str(),
                static_cast<long long>(r->steps), r->num_workers,
                format_duration(static_cast<double>(r->duration_ns)).c_str());
  }
}

// The message shown instead of the views when nothing could be opened.
void draw_nothing_open(StudioState& s) {
  ImGui::Dummy(ImVec2(0, 40));
  if (s.status_error) {
    ImGui::PushStyleColor(ImGuiCol_Text, IM_COL32(255, 110, 100, 255));
    ImGui::TextWrapped("Could not open the input:\n%s", s.status.c_str());
    ImGui::PopStyleColor();
  } else {
    ImGui::TextUnformatted("Nothing is open.");
  }
  ImGui::Spacing();
  ImGui::TextDisabled("File > Open... takes a trace.db (mpk run --trace t.db) or a scheduled .mpk.");
}

// The status line's height: its message wrapped to the window, at most kStatusLines lines
// (a longer one scrolls).
constexpr int kStatusLines = 6;
float status_height(const StudioState& s) {
  const float wrap = ImGui::GetContentRegionAvail().x;
  const float text = ImGui::CalcTextSize(s.status.c_str(), nullptr, false, wrap).y;
  const float line = ImGui::GetTextLineHeightWithSpacing();
  return std::min(std::max(text, ImGui::GetTextLineHeight()), kStatusLines * line) + ImGui::GetStyle().ItemSpacing.y * 2 + 4;
}

void draw_status_line(StudioState& s, float height) {
  ImGui::Separator();
  if (s.status_error) ImGui::PushStyleColor(ImGuiCol_Text, IM_COL32(255, 110, 100, 255));
  ImGui::BeginChild("status", ImVec2(0, height - ImGui::GetStyle().ItemSpacing.y - 2), false);
  ImGui::TextWrapped("%s", s.status.c_str());  // a deadlock's cycle is long: it wraps
  ImGui::EndChild();
  if (s.status_error) ImGui::PopStyleColor();
  s.status_height = height;
}

void draw_frame_time(const StudioState& s) {
  const ImGuiIO& io = ImGui::GetIO();
  ImGui::SetNextWindowPos(ImVec2(io.DisplaySize.x - 10, 30), ImGuiCond_Always, ImVec2(1, 0));
  ImGui::SetNextWindowBgAlpha(0.8f);
  const ImGuiWindowFlags f = ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_AlwaysAutoResize |
                             ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoFocusOnAppearing |
                             ImGuiWindowFlags_NoNav | ImGuiWindowFlags_NoInputs;
  if (ImGui::Begin("##frametime", nullptr, f)) {
    ImGui::Text("frame %.2f ms CPU, %.0f fps", s.frame_cpu_ms, io.Framerate);
    ImGui::Text("boxes %lld (%lld merged)", static_cast<long long>(s.timeline.boxes_drawn),
                static_cast<long long>(s.timeline.merged_boxes));
  }
  ImGui::End();
}

double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

}  // namespace

double parse_time_ns(const std::string& text) {
  static const std::pair<const char*, double> kUnits[] = {{"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}};
  for (const auto& [suffix, scale] : kUnits) {
    const std::string u(suffix);
    if (text.size() > u.size() && text.compare(text.size() - u.size(), u.size(), u) == 0 &&
        (u != "s" || !std::isalpha(static_cast<unsigned char>(text[text.size() - 2])))) {
      try {
        size_t used = 0;
        const std::string num = text.substr(0, text.size() - u.size());
        const double v = std::stod(num, &used);
        if (used == num.size() && std::isfinite(v)) return v * scale;
      } catch (const std::exception&) {
      }
      throw Error("'" + text + "' is not a time (e.g. 850ns, 12.5us, 3ms)");
    }
  }
  try {
    size_t used = 0;
    const double v = std::stod(text, &used);
    if (used == text.size() && std::isfinite(v)) return v;
  } catch (const std::exception&) {
  }
  throw Error("'" + text + "' is not a time (e.g. 850ns, 12.5us, 3ms)");
}

std::string app_usage() {
  return "usage: mpk-studio [trace.db | graph.mpk] [--run N] [--compare-run M]\n"
         "                  [--view " + view_names("|") + "] [--steps N]\n"
         "                  [--window T0:T1] [--select TASK:STEP [--why-idle]]\n"
         "                  [--screenshot out.png [--size WxH]]\n"
         "                  [--apply PIPELINE|same] [--costs run|machine|FILE] [--write-into-input]\n"
         "Opens a trace.db (default: its last run), or simulates a scheduled .mpk task graph\n"
         "(--steps, default 8) and opens that. --window shows a time range (850ns, 12.5us, 3ms);\n"
         "--select selects a task's execution, --why-idle walks back from it. --screenshot\n"
         "renders the view into a PNG and exits. --apply runs a pipeline over the run (same: its\n"
         "own) and compares it, simulated, with the run's own schedule simulated under the same\n"
         "cost model (--costs; default: the run's own, calibrated from a GPU run); new runs go\n"
         "to NAME.studio.db beside the input unless --write-into-input.\n";
}

AppOptions parse_app_options(const std::vector<std::string>& args) {
  AppOptions o;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const auto value = [&]() -> const std::string& {
      if (i + 1 >= args.size()) throw Error("option " + a + " needs a value");
      return args[++i];
    };
    if (a == "--run") {
      o.run = parse_int(a, value());
    } else if (a == "--compare-run") {
      o.compare_run = parse_int(a, value());
    } else if (a == "--steps") {
      o.sim_steps = static_cast<int32_t>(parse_int(a, value()));
      if (o.sim_steps < 1) throw Error("--steps needs at least 1");
    } else if (a == "--view") {
      const std::string& v = value();
      const auto view = parse_view(v);
      if (!view) throw Error("unknown view '" + v + "' (" + view_names(", ") + ")");
      o.view = *view;
    } else if (a == "--screenshot") {
      o.screenshot = value();
    } else if (a == "--size") {
      const std::string& v = value();
      int w = 0, h = 0;
      char extra = 0;
      if (std::sscanf(v.c_str(), "%dx%d%c", &w, &h, &extra) != 2 || w < 320 || h < 240 || w > 8192 ||
          h > 8192)
        throw Error("--size needs WxH between 320x240 and 8192x8192, got '" + v + "'");
      o.width = w;
      o.height = h;
    } else if (a == "--window") {
      const std::string& v = value();
      const size_t colon = v.find(':');
      if (colon == std::string::npos) throw Error("--window needs T0:T1, got '" + v + "'");
      o.window_t0_ns = parse_time_ns(v.substr(0, colon));
      o.window_t1_ns = parse_time_ns(v.substr(colon + 1));
      if (o.window_t1_ns <= o.window_t0_ns) throw Error("--window needs T0 < T1, got '" + v + "'");
    } else if (a == "--select") {
      const std::string& v = value();
      long long task = -1, step = -1;
      char extra = 0;
      if (std::sscanf(v.c_str(), "%lld:%lld%c", &task, &step, &extra) != 2 || task < 0 || step < 0)
        throw Error("--select needs TASK:STEP, got '" + v + "'");
      o.select_task = static_cast<TaskId>(task);
      o.select_step = static_cast<int32_t>(step);
    } else if (a == "--why-idle") {
      o.why_idle = true;
    } else if (a == "--apply") {
      o.apply = value();
      if (o.apply.empty()) throw Error("--apply needs a pipeline (or 'same')");
    } else if (a == "--costs") {
      o.costs = value();
      if (o.costs.empty()) throw Error("--costs needs run, machine or a cost file");
    } else if (a == "--write-into-input") {
      o.write_into_input = true;
    } else if (a == "-h" || a == "--help") {
      throw Error(app_usage());
    } else if (!a.empty() && a[0] == '-') {
      throw Error("unknown option '" + a + "'\n" + app_usage());
    } else if (o.input.empty()) {
      o.input = a;
    } else {
      throw Error("one input file only (got '" + o.input + "' and '" + a + "')");
    }
  }
  return o;
}

bool apply_options(StudioState& s, const AppOptions& o) {
  s.view = o.view;
  s.view_changed = true;
  if (o.input.empty()) {
    set_status(s, "Nothing is open: File > Open...", false);
    return true;
  }
  if (!open_input(s, o.input, o.run, o.sim_steps)) {
    std::fprintf(stderr, "mpk-studio: error: %s\n", s.status.c_str());
    return false;
  }
  if (o.compare_run >= 0) {
    if (!find_run(s, o.compare_run)) {
      set_status(s, o.input + ": no run " + std::to_string(o.compare_run) + " to compare with", true);
      std::fprintf(stderr, "mpk-studio: error: %s\n", s.status.c_str());
      return false;
    }
    s.compare_run = o.compare_run;
  }
  if (o.window_t1_ns > o.window_t0_ns) s.window = {o.window_t0_ns, o.window_t1_ns};
  if (o.select_task >= 0) {
    const int64_t x = o.select_task < static_cast<TaskId>(s.model->graph().graph.tasks.size())
                          ? s.model->find(o.select_task, o.select_step)
                          : -1;
    if (x < 0) {
      set_status(s, "run " + std::to_string(s.run) + " has no execution of task " +
                        std::to_string(o.select_task) + " at step " + std::to_string(o.select_step), true);
      std::fprintf(stderr, "mpk-studio: error: %s\n", s.status.c_str());
      return false;
    }
    select_execution(s, x);
    s.timeline.scroll_to_worker = s.model->execution(x).worker;
    if (o.why_idle) show_why_idle(s);
  }
  s.write_into_input = o.write_into_input;
  set_cost_choice(s, o.costs == "run"       ? CostChoice{}
                     : o.costs == "machine" ? CostChoice{CostSource::kMachineModel, ""}
                                            : CostChoice{CostSource::kFile, o.costs});
  if (!o.apply.empty()) {
    const RunRecord* r = find_run(s, s.run);
    set_pipeline_text(s.pipeline, o.apply == "same" && r ? r->pipeline : o.apply);
    s.pipeline.text_edited = true;
    if (!apply_pipeline(s)) {
      const PipelineViewState& p = s.pipeline;
      set_status(s, "--apply: " + (p.text_error.empty() ? p.job_message : p.text_error), true);
      std::fprintf(stderr, "mpk-studio: error: %s\n", s.status.c_str());
      return false;
    }
  }
  return true;
}

void draw_app_frame(StudioState& s) {
  const double t0 = thread_cpu_ms();
  const ImGuiIO& io = ImGui::GetIO();
  if (ImGui::IsKeyPressed(kKeyQ) && io.KeyCtrl) s.quit_requested = true;
  if (ImGui::IsKeyPressed(kKeyF2)) s.show_frame_time = !s.show_frame_time;
  // A pipeline job's result (an applied pipeline, a loaded edit session, a stored edit)
  // is taken whichever view is shown.
  poll_pipeline(s);
  s.background_jobs = 0;  // counted again below: the graph view's layouts, pipeline jobs

  ImGui::SetNextWindowPos(ImVec2(0, 0));
  ImGui::SetNextWindowSize(io.DisplaySize);
  const ImGuiWindowFlags flags = ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove |
                                 ImGuiWindowFlags_NoResize | ImGuiWindowFlags_MenuBar |
                                 ImGuiWindowFlags_NoSavedSettings |
                                 ImGuiWindowFlags_NoBringToFrontOnFocus;
  ImGui::PushStyleVar(ImGuiStyleVar_WindowRounding, 0);
  ImGui::Begin("mpk-studio", nullptr, flags);
  ImGui::PopStyleVar();
  draw_menu(s);
  draw_open_popup(s);
  draw_export_popup(s);
  const float status_h = status_height(s);
  if (!s.model) {
    draw_nothing_open(s);
  } else {
    draw_header(s);
    if (ImGui::CollapsingHeader("Runs", ImGuiTreeNodeFlags_DefaultOpen)) draw_runs_panel(s);
    if (ImGui::BeginTabBar("views")) {
      // A view picked before this frame (options, a job's result, a panel last frame)
      // selects its tab; a panel may pick another while it draws, for the next frame.
      const bool picked = s.view_changed;
      const View wanted = s.view;
      s.view_changed = false;
      for (const PanelInfo& p : registered_panels()) {
        const ImGuiTabItemFlags tf = picked && wanted.name == p.name ? ImGuiTabItemFlags_SetSelected : 0;
        if (ImGui::BeginTabItem(p.title, nullptr, tf)) {
          if (!picked) s.view = View{p.name};
          ImGui::BeginChild("view", ImVec2(0, -status_h), false);
          p.draw(s);
          ImGui::EndChild();
          ImGui::EndTabItem();
        }
      }
      ImGui::EndTabBar();
    }
  }
  // A pipeline job keeps frames coming (its result is taken by a frame) and delays a
  // --screenshot until it is done.
  if (s.pipeline.job != PipelineJob::kNone || s.pipeline.store_pending) ++s.background_jobs;
  ImGui::SetCursorPosY(ImGui::GetWindowHeight() - status_h);
  draw_status_line(s, status_h);
  ImGui::End();
  if (s.show_frame_time) draw_frame_time(s);
  s.frame_cpu_ms = thread_cpu_ms() - t0;
}

void apply_style() {
  ImGui::StyleColorsDark();
  ImGuiStyle& st = ImGui::GetStyle();
  st.FrameRounding = 3;
  st.TabRounding = 3;
  st.GrabRounding = 3;
  st.WindowPadding = ImVec2(8, 6);
  st.ItemSpacing = ImVec2(8, 4);
  st.ScrollbarSize = 12;
  ImVec4* c = st.Colors;
  c[ImGuiCol_WindowBg] = ImVec4(0.11f, 0.12f, 0.13f, 1.0f);
  c[ImGuiCol_ChildBg] = ImVec4(0.09f, 0.10f, 0.11f, 1.0f);
  c[ImGuiCol_MenuBarBg] = ImVec4(0.15f, 0.16f, 0.18f, 1.0f);
  c[ImGuiCol_Header] = ImVec4(0.22f, 0.32f, 0.46f, 1.0f);
  c[ImGuiCol_TableRowBgAlt] = ImVec4(1, 1, 1, 0.03f);
}

}  // namespace mpk::studio
