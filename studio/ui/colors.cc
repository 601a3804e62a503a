// The studio's palette: operator kinds in distinct hues chosen so that kinds which
// follow each other in a layer (norm -> linear -> rope -> attention) differ clearly.
#include "studio/ui/colors.h"

#include <array>
#include <string>

namespace mpk::studio {
namespace {

constexpr std::array<ImU32, kNumOpKinds> kKindColors = {
    IM_COL32(141, 110, 99, 255),   // embedding: brown
    IM_COL32(255, 202, 40, 255),   // rms_norm: amber
    IM_COL32(66, 133, 244, 255),   // linear: blue
    IM_COL32(171, 71, 188, 255),   // qk_norm: purple
    IM_COL32(0, 172, 193, 255),    // rope: cyan
    IM_COL32(120, 144, 156, 255),  // kv_append: blue grey
    IM_COL32(229, 57, 53, 255),    // attention: red
    IM_COL32(67, 160, 71, 255),    // silu_mul: green
    IM_COL32(255, 112, 67, 255),   // residual_add: orange
    IM_COL32(205, 220, 57, 255),   // lm_head: lime
    IM_COL32(236, 64, 122, 255),   // argmax: pink
};

constexpr std::array<ImU32, 4> kBubbleColors = {
    IM_COL32(230, 74, 25, 255),    // wait: red-orange
    IM_COL32(158, 158, 158, 255),  // queue_empty: grey
    IM_COL32(121, 85, 72, 255),    // step_tail: brown
    IM_COL32(255, 214, 0, 255),    // overhead: yellow
};

void legend_item(ImU32 color, const char* name, bool hatched) {
  const float h = ImGui::GetTextLineHeight();
  const ImVec2 p = ImGui::GetCursorScreenPos();
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 q(p.x + h, p.y + h);
  if (hatched) {
    dl->AddRectFilled(p, q, with_alpha(color, 70));
    dl->PushClipRect(p, q, true);
    for (float x = p.x - h; x < q.x; x += 4) dl->AddLine({x, q.y}, {x + h, p.y}, color, 1.0f);
    dl->PopClipRect();
  } else {
    dl->AddRectFilled(p, q, color, 2.0f);
  }
  ImGui::Dummy(ImVec2(h, h));
  ImGui::SameLine(0, 4);
  ImGui::TextUnformatted(name);
}

}  // namespace

ImU32 kind_color(OpKind k) { return kKindColors[static_cast<size_t>(k) % kKindColors.size()]; }

ImU32 bubble_color(BubbleCause c) { return kBubbleColors[static_cast<size_t>(c) % 4]; }

ImU32 walk_color() { return IM_COL32(0, 255, 200, 255); }  // mint: nearest kind is rope's cyan

ImU32 darken(ImU32 c, float f) {
  const auto ch = [&](int shift) {
    return static_cast<ImU32>(static_cast<float>((c >> shift) & 0xFF) * f) << shift;
  };
  return ch(IM_COL32_R_SHIFT) | ch(IM_COL32_G_SHIFT) | ch(IM_COL32_B_SHIFT) |
         (c & IM_COL32_A_MASK);
}

ImU32 with_alpha(ImU32 c, int alpha) {
  return (c & ~IM_COL32_A_MASK) | (static_cast<ImU32>(alpha & 0xFF) << IM_COL32_A_SHIFT);
}

void draw_kind_legend(const bool* present, int* hovered_kind) {
  ImGui::PushStyleVar(ImGuiStyleVar_ItemSpacing, ImVec2(12, 4));
  for (int k = 0; k < kNumOpKinds; ++k) {
    if (present && !present[k]) continue;
    const std::string name(name_of(static_cast<OpKind>(k)));
    ImGui::BeginGroup();
    legend_item(kind_color(static_cast<OpKind>(k)), name.c_str(), false);
    ImGui::EndGroup();
    if (hovered_kind && ImGui::IsItemHovered()) *hovered_kind = k;
    ImGui::SameLine();
  }
  ImGui::TextDisabled("|");
  for (int c = 0; c < 4; ++c) {
    ImGui::SameLine();
    ImGui::BeginGroup();
    legend_item(bubble_color(static_cast<BubbleCause>(c)), name_of(static_cast<BubbleCause>(c)),
                true);
    ImGui::EndGroup();
  }
  ImGui::PopStyleVar();
}

}  // namespace mpk::studio
