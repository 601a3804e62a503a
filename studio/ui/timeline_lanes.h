// The timeline's lanes under the ruler (studio/model/lanes.h computes them): the busy-SM strip
// over the whole run with the window marked (click or drag on it to move the window
// there), and the bandwidth lane on the window's axis with the floor marked.
#pragma once

#include "imgui.h"
#include "studio/model/state.h"
#include "studio/model/timeline_layout.h"

namespace mpk::studio {

inline constexpr float kStripHeight = 14.0f;
inline constexpr float kBandwidthHeight = 30.0f;
inline constexpr float kLanesHeight = kStripHeight + kBandwidthHeight + 4.0f;

// Draws both lanes in [p0, p0 + (width, kLanesHeight)); `axis` is the rows' axis.
void draw_timeline_lanes(StudioState& s, const TimeAxis& axis, ImVec2 p0, float width);

}  // namespace mpk::studio
