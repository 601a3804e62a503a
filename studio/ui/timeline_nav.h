// The timeline's navigation bar (studio/model/navigation.h has the logic): a search box over
// operator and task names with previous / next instance, the filter by layer, step and
// kind, "Zoom to" (the range, the walk or the selection) and the edit-mode switch; the
// File menu's export of a range (CSV, Chrome JSON).
#pragma once

#include <string>

#include "studio/model/state.h"

namespace mpk::studio {

inline constexpr int kKeyF3 = 292;  // GLFW_KEY_F3: next match (Shift: previous)

// One line of widgets; call inside the timeline panel.
void draw_navigation_bar(StudioState& s);
// Searches (again, when the query or the run changed) and selects the next or previous
// match, bringing it into view. Returns false when nothing matches.
bool step_search(StudioState& s, bool forward);
// Zooms to the range, the walk or the selection; false when there is none.
bool zoom_to(StudioState& s);

enum class ExportFormat { kCsv, kChromeJson };
// Writes the executions of the picked range (else the visible window) to `path`; sets
// the status line (what was written, or why not). Returns whether it wrote.
bool export_range(StudioState& s, const std::string& path, ExportFormat format);
// The File menu's items and their path popup; call inside the menu / after it.
void export_menu_items(StudioState& s);
void draw_export_popup(StudioState& s);

}  // namespace mpk::studio
