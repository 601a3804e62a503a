// One function per panel of mpk-studio, each in its own studio/panel_<name>.cc. The app
// (studio/app.cc) lays out the window and calls the panel of the current view with the
// remaining space as the current ImGui region; a panel draws into it and reads/writes
// the shared StudioState (studio/state.h). A panel must cope with s.model == nullptr
// (nothing open) by saying so. A new view: a View value (state.h), a panel file, a line
// in app.cc's view table.
#pragma once

#include "studio/state.h"

namespace mpk::studio {

void draw_runs_panel(StudioState& s);      // panel_runs.cc: the run list (table)
void draw_timeline_panel(StudioState& s);  // panel_timeline.cc: one row per worker
void draw_stats_panel(StudioState& s);     // panel_stats.cc
void draw_compare_panel(StudioState& s);   // panel_compare.cc: s.run vs s.compare_run
void draw_graph_panel(StudioState& s);     // panel_graph.cc: the op-level graph
void draw_pipeline_panel(StudioState& s);  // panel_pipeline.cc: edit, re-run, compare

// The hand-edit keys on the selected task (panel_pipeline.cc; the timeline and pipeline
// views call it): Alt+Left/Right/Up/Down move it, Ctrl+Z / Ctrl+Y undo and redo. With no
// edit session for the current run it starts loading one and says so.
void handle_edit_keys(StudioState& s);

}  // namespace mpk::studio
