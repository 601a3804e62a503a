// The panels other code calls by name. A view's panel is one studio/ui/panel_<name>.cc that
// registers itself with one line (MPK_STUDIO_PANEL, studio/model/panel_registry.h) and needs
// no declaration here: the app (studio/ui/app.cc) lays out the window and calls the panel
// of the current view with the remaining space as the current ImGui region; a panel
// draws into it and reads/writes the shared StudioState (studio/model/state.h). A panel must
// cope with s.model == nullptr (nothing open) by saying so.
#pragma once

#include "studio/model/state.h"

namespace mpk::studio {

void draw_runs_panel(StudioState& s);      // panel_runs.cc: the run list (table), above the views

// The hand-edit keys on the selected task (panel_pipeline.cc; the timeline and pipeline
// views call it): Alt+Left/Right/Up/Down move it, Ctrl+Z / Ctrl+Y undo and redo. With no
// edit session for the current run it starts loading one and says so.
void handle_edit_keys(StudioState& s);

}  // namespace mpk::studio
