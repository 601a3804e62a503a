// HeadlessFrame: an ImGui context with a built font atlas and no backend. Key indices
// map to themselves (io.KeyMap[k] = k), the convention the tests and panels share with
// ImGui::GetKeyIndex.
#include "studio/ui/headless_frame.h"

#include "studio/ui/app.h"

namespace mpk::studio {

HeadlessFrame::HeadlessFrame(float width, float height) {
  previous_ = ImGui::GetCurrentContext();
  ctx_ = ImGui::CreateContext();
  ImGui::SetCurrentContext(ctx_);
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = nullptr;
  io.LogFilename = nullptr;
  io.DisplaySize = ImVec2(width, height);
  io.DeltaTime = 1.0f / 60.0f;
  // Like the OpenGL 3 backend: draw lists may exceed 64k vertices (16-bit indices).
  io.BackendFlags |= ImGuiBackendFlags_RendererHasVtxOffset;
  for (int k = 0; k < ImGuiKey_COUNT; ++k) io.KeyMap[k] = k;
  unsigned char* pixels = nullptr;
  int w = 0, h = 0;
  io.Fonts->GetTexDataAsRGBA32(&pixels, &w, &h);  // builds the atlas
  io.Fonts->SetTexID(reinterpret_cast<ImTextureID>(1));
  apply_style();
}

HeadlessFrame::~HeadlessFrame() {
  ImGui::DestroyContext(ctx_);
  ImGui::SetCurrentContext(previous_ == ctx_ ? nullptr : previous_);
}

void HeadlessFrame::run(const std::function<void()>& frame, int n) {
  ImGui::SetCurrentContext(ctx_);
  ImGuiIO& io = ImGui::GetIO();
  for (int i = 0; i < n; ++i) {
    ImGui::NewFrame();
    frame();
    ImGui::Render();
    ++frames_;
    // Wheel and characters are consumed by the frame that saw them.
    io.MouseWheel = 0;
    io.MouseWheelH = 0;
  }
}

void HeadlessFrame::mouse_move(float x, float y) {
  ImGui::SetCurrentContext(ctx_);
  ImGui::GetIO().MousePos = ImVec2(x, y);
}

void HeadlessFrame::mouse_button(int button, bool down) {
  ImGui::SetCurrentContext(ctx_);
  ImGui::GetIO().MouseDown[button] = down;
}

void HeadlessFrame::click(const std::function<void()>& frame, float x, float y, int button) {
  mouse_move(x, y);
  run(frame);
  mouse_button(button, true);
  run(frame);
  mouse_button(button, false);
  run(frame);
}

void HeadlessFrame::drag(const std::function<void()>& frame, float x, float y, float dx, float dy,
                         int steps, int button) {
  mouse_move(x, y);
  run(frame);
  mouse_button(button, true);
  run(frame);
  for (int i = 1; i <= steps; ++i) {
    mouse_move(x + dx * static_cast<float>(i) / static_cast<float>(steps),
               y + dy * static_cast<float>(i) / static_cast<float>(steps));
    run(frame);
  }
  mouse_button(button, false);
  run(frame);
}

void HeadlessFrame::wheel(float dy) {
  ImGui::SetCurrentContext(ctx_);
  ImGui::GetIO().MouseWheel += dy;
}

void HeadlessFrame::press_key(const std::function<void()>& frame, ImGuiKey key) {
  press_raw_key(frame, key);
}

void HeadlessFrame::press_raw_key(const std::function<void()>& frame, int key) {
  ImGui::SetCurrentContext(ctx_);
  ImGui::GetIO().KeysDown[key] = true;
  run(frame);
  ImGui::SetCurrentContext(ctx_);
  ImGui::GetIO().KeysDown[key] = false;
  run(frame);
}

void HeadlessFrame::type_char(unsigned int c) {
  ImGui::SetCurrentContext(ctx_);
  ImGui::GetIO().AddInputCharacter(c);
}

}  // namespace mpk::studio
