// Painting a row's merged boxes, the same in the timeline and the compare lanes: each
// slice (studio/model/timeline_layout.h) is a column whose lower part, in proportion to how busy
// the worker was, has the colour of the kind shown, and whose upper part a tint of the
// idle cause with the most time there. Column heights are whole pixels with the rounding
// carried along the row, so the busy pixels of a row add up to its busy time.
#pragma once

#include <functional>
#include <vector>

#include "imgui.h"
#include "studio/model/timeline_layout.h"

namespace mpk::studio {

// The tint of an idle cause (BubbleCause, or -1 for idle time no bubble explains).
ImU32 idle_tint(int cause);

// Paints `slices` between rows y0 and y1 (rounded to whole pixels); `dimmed` (may be
// empty) says which slices to darken (another kind hovered, a filter).
void paint_slices(ImDrawList* dl, const std::vector<KindSlice>& slices, float y0, float y1,
                  const std::function<bool(const KindSlice&)>& dimmed);

}  // namespace mpk::studio
