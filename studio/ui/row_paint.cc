// Merged boxes as busy columns (studio/ui/row_paint.h).
#include "studio/ui/row_paint.h"

#include <algorithm>
#include <cmath>

#include "studio/ui/colors.h"

namespace mpk::studio {

ImU32 idle_tint(int cause) {
  return cause < 0 ? IM_COL32(120, 120, 120, 40) : with_alpha(bubble_color(static_cast<BubbleCause>(cause)), 70);
}

void paint_slices(ImDrawList* dl, const std::vector<KindSlice>& slices, float y0, float y1,
                  const std::function<bool(const KindSlice&)>& dimmed) {
  y0 = std::round(y0);
  y1 = std::round(y1);
  const float h = y1 - y0;
  if (h <= 0 || slices.empty()) return;
  // The idle tint under each run of slices with one cause (the busy columns cover it).
  for (size_t i = 0; i < slices.size();) {
    size_t j = i + 1;
    const bool dim = dimmed && dimmed(slices[i]);
    while (j < slices.size() && slices[j].cause == slices[i].cause && slices[j].x0 == slices[j - 1].x1 &&
           (dimmed && dimmed(slices[j])) == dim)
      ++j;
    const ImU32 tint = idle_tint(slices[i].cause);
    dl->AddRectFilled(ImVec2(slices[i].x0, y0), ImVec2(slices[j - 1].x1, y1), dim ? darken(tint, 0.5f) : tint);
    i = j;
  }
  // Busy columns, whole pixels high, the rounding carried along the row; neighbours of one
  // height and colour are one rectangle.
  float carry = 0;  // busy pixel area owed to the next column
  float run_x0 = 0, run_x1 = 0, run_px = 0;
  ImU32 run_colour = 0;
  const auto flush = [&] {
    if (run_px > 0 && run_x1 > run_x0) dl->AddRectFilled(ImVec2(run_x0, y1 - run_px), ImVec2(run_x1, y1), run_colour);
  };
  for (const KindSlice& sl : slices) {
    const float w = sl.x1 - sl.x0;
    if (w <= 0) continue;
    const float want = sl.busy * h * w + carry;
    const float px = std::clamp(std::round(want / w), 0.0f, h);
    carry = want - px * w;
    const ImU32 c = darken(kind_color(sl.kind), 0.85f);
    const ImU32 colour = dimmed && dimmed(sl) ? darken(c, 0.35f) : c;
    if (px == run_px && colour == run_colour && sl.x0 == run_x1) {
      run_x1 = sl.x1;
      continue;
    }
    flush();
    run_x0 = sl.x0;
    run_x1 = sl.x1;
    run_px = px;
    run_colour = colour;
  }
  flush();
}

}  // namespace mpk::studio
