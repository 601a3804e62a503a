// The timeline's details pane for the selected execution: what it is, its producers
// and consumers (click one to select it), and the why-idle walk (studio/model/why_idle.h).
#pragma once

#include <cstdint>
#include <functional>

#include "studio/model/state.h"

namespace mpk::studio {

// Computes the why-idle walk of the selected execution and turns its display on.
void show_why_idle(StudioState& s);

// Draws the pane below the rows; `go_to` brings an execution into view.
void draw_timeline_details(StudioState& s, const std::function<void(int64_t)>& go_to);

}  // namespace mpk::studio
