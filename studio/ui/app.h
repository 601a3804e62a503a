// The mpk-studio application: command-line options, one frame of the whole window
// (menu, run list, view tabs, the current view's panel, status line), the GLFW/OpenGL
// main loop and the --screenshot mode. draw_app_frame is renderer-free, so tests run it
// through HeadlessFrame.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "studio/model/state.h"

namespace mpk::studio {

// Keys without an ImGuiKey_ in ImGui 1.86 are read by their GLFW key code (letters are
// their upper-case ASCII code); HeadlessFrame::press_raw_key feeds the same codes.
inline constexpr int kKeyF2 = 291;  // GLFW_KEY_F2
inline constexpr int kKeyQ = 'Q';

struct AppOptions {
  std::string input;            // trace.db or .mpk; "" = nothing open
  int64_t run = -1;             // -1: the last run
  int64_t compare_run = -1;
  View view = View::kTimeline;
  std::string screenshot;       // PNG path; "" = interactive
  int width = 1600, height = 900;
  int32_t sim_steps = 8;        // steps simulated for a .mpk input
  // The timeline's first view (screenshots of a detail): a time window, a selected
  // task execution and its why-idle walk.
  double window_t0_ns = 0, window_t1_ns = 0;  // equal: the whole run
  TaskId select_task = -1;
  int32_t select_step = 0;
  bool why_idle = false;
  // The optimizer loop from the command line (with --screenshot, a scripted run): the
  // pipeline to Apply to the opened run ("same": the run's own), the cost model ("run":
  // the run's own, "machine", or a cost file) and whether new runs go into the opened file.
  std::string apply;
  std::string costs = "run";
  bool write_into_input = false;
};

// "850ns", "12.5us", "3ms", "1.2s", or a bare number of ns. Throws mpk::Error.
double parse_time_ns(const std::string& text);

// Parses argv (after the program name). Throws mpk::Error naming a bad option.
AppOptions parse_app_options(const std::vector<std::string>& args);
std::string app_usage();

// Applies options to a fresh state: opens the input, selects the runs and the view.
// Returns false (status set, message already printed to stderr) on bad input.
bool apply_options(StudioState& s, const AppOptions& o);

// One frame of the whole window, filling the display. Call between NewFrame and Render.
void draw_app_frame(StudioState& s);

// Sets the studio's ImGui style (colours, spacing) on the current context.
void apply_style();

// Runs the interactive window, or renders a screenshot and exits (after an --apply's job,
// printing its outcome: "apply: A run 1 ... B run 2 ..."). Returns the exit code.
int run_app(const AppOptions& o);

}  // namespace mpk::studio
