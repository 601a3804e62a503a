// A test helper that runs frames of the studio (or any ImGui code) with no window and
// no renderer: it owns an ImGui context with a built font atlas and a display size, lets
// the caller feed synthetic mouse and keyboard input, and runs N frames (NewFrame, the
// caller's frame function, Render). Draw data is produced but never rasterized.
#pragma once

#include <functional>

#include "imgui.h"

namespace mpk::studio {

class HeadlessFrame {
 public:
  explicit HeadlessFrame(float width = 1600, float height = 900);
  ~HeadlessFrame();
  HeadlessFrame(const HeadlessFrame&) = delete;
  HeadlessFrame& operator=(const HeadlessFrame&) = delete;

  // Runs `n` frames of `frame` (called between ImGui::NewFrame and ImGui::Render).
  // Input set before the call applies to the first of them; a wheel or a typed
  // character is consumed by it.
  void run(const std::function<void()>& frame, int n = 1);

  void mouse_move(float x, float y);
  void mouse_button(int button, bool down);
  // Moves to (x, y), presses and releases `button`, one frame each.
  void click(const std::function<void()>& frame, float x, float y, int button = 0);
  // Moves to (x, y) then drags to (x + dx, y + dy) with `button` held, over `steps` frames.
  void drag(const std::function<void()>& frame, float x, float y, float dx, float dy,
            int steps = 4, int button = 0);
  void wheel(float dy);
  // Holds an ImGuiKey_ (arrows, Home, ...) down for one frame, then releases it.
  void press_key(const std::function<void()>& frame, ImGuiKey key);
  // The same for a raw key code (GLFW's: 'F' for F, 291 for F2; see studio/ui/app.h).
  void press_raw_key(const std::function<void()>& frame, int key);
  void type_char(unsigned int c);

  ImGuiContext* context() const { return ctx_; }
  ImDrawData* draw_data() const { return ImGui::GetDrawData(); }
  int frames() const { return frames_; }

 private:
  ImGuiContext* ctx_ = nullptr;
  ImGuiContext* previous_ = nullptr;
  int frames_ = 0;
};

}  // namespace mpk::studio
