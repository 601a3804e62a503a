// The studio's views register themselves: a view is one panel file with one line,
//   MPK_STUDIO_PANEL(stats, "Stats", 20, draw_stats_panel);
// (its name for --view and StudioState::view, its tab title, its place among the tabs
// (lower first) and the function that draws it into the current ImGui region). The app
// draws a tab per registered panel in that order; nothing else needs to know the view.
// A panel keeps its own UI state in StudioState::panel_state<T>() (state.h). The
// registrations run at start-up from files nothing else references, so the UI library is
// linked whole (studio/CMakeLists.txt).
#pragma once

#include <string_view>
#include <vector>

namespace mpk::studio {

struct StudioState;

struct PanelInfo {
  const char* name = "";   // "timeline", "stats", ...: kebab-case, unique
  const char* title = "";  // the tab's title
  int order = 0;           // tabs from the lowest
  void (*draw)(StudioState&) = nullptr;
};

// Registers a panel; MPK_STUDIO_PANEL calls it at start-up. A second panel of one name
// is a programming error: it aborts with a message.
bool register_panel(const PanelInfo& p);
// The registered panels by order (then name).
const std::vector<PanelInfo>& registered_panels();
// The panel named `name`; nullptr when none is.
const PanelInfo* find_panel(std::string_view name);

}  // namespace mpk::studio

#define MPK_STUDIO_PANEL(id, title, order, draw)                                             \
  [[maybe_unused]] static const bool mpk_studio_panel_registered_##id =                      \
      ::mpk::studio::register_panel(::mpk::studio::PanelInfo{#id, title, order, draw})
