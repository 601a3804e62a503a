// Colours of the studio: one stable colour per operator kind (the same kind has the same
// colour in every run, view and screenshot), one per bubble cause, and the legend that
// explains them. Colours are ImGui's packed ImU32 (IM_COL32: R in the low byte).
#pragma once

#include <cstdint>

#include "imgui.h"
#include "ir/types.h"
#include "traces/trace_db.h"

namespace mpk::studio {

ImU32 kind_color(OpKind k);
ImU32 bubble_color(BubbleCause c);
// The why-idle walk's outline: a colour no kind or idle cause uses.
ImU32 walk_color();
// `c` scaled towards black by `factor` in [0, 1] (1: unchanged), alpha kept.
ImU32 darken(ImU32 c, float factor);
ImU32 with_alpha(ImU32 c, int alpha);

// One line of coloured squares with names: the operator kinds present in `present`
// (indexed by OpKind; all when null), then the bubble causes. Sets *hovered_kind to the
// kind under the mouse, if any.
void draw_kind_legend(const bool* present, int* hovered_kind);

}  // namespace mpk::studio
