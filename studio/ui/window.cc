// The GLFW + OpenGL 3 window of mpk-studio: the interactive main loop, and the
// --screenshot mode (render a few frames into a window, capture the last, exit).
#include <GLFW/glfw3.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "imgui.h"
#include "backends/imgui_impl_glfw.h"
#include "backends/imgui_impl_opengl3.h"
#include "ir/error.h"
#include "studio/ui/app.h"
#include "studio/ui/key_queue.h"
#include "studio/ui/screenshot.h"

namespace mpk::studio {
namespace {

constexpr int kScreenshotFrames = 4;  // the layout settles (tab bar, tables) after two

void glfw_error(int code, const char* message) {
  std::fprintf(stderr, "mpk-studio: GLFW error %d: %s\n", code, message);
}

// Owns the window and the ImGui context with its backends.
class Window {
 public:
  Window(int width, int height, bool visible) {
    glfwSetErrorCallback(glfw_error);
    if (!glfwInit())
      throw Error("cannot open a window: GLFW found no display (set DISPLAY, or run the "
                  "screenshot under xvfb-run)");
    // 3.2 core: the OpenGL 3 backend then draws lists of more than 64k vertices.
    glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
    glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 2);
    glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
    glfwWindowHint(GLFW_OPENGL_FORWARD_COMPAT, GLFW_TRUE);
    glfwWindowHint(GLFW_VISIBLE, visible ? GLFW_TRUE : GLFW_FALSE);
    window_ = glfwCreateWindow(width, height, "mpk-studio", nullptr, nullptr);
    if (!window_) {
      glfwTerminate();
      throw Error("cannot create an OpenGL 3.2 window of " + std::to_string(width) + "x" +
                  std::to_string(height));
    }
    glfwMakeContextCurrent(window_);
    glfwSwapInterval(1);
    IMGUI_CHECKVERSION();
    ImGui::CreateContext();
    ImGui::GetIO().IniFilename = nullptr;
    apply_style();
    ImGui_ImplGlfw_InitForOpenGL(window_, true);
    ImGui_ImplOpenGL3_Init("#version 150");
    // Key events go to the backend, then to the queue that keeps presses a slow frame
    // would miss (studio/ui/key_queue.h).
    glfwSetWindowUserPointer(window_, this);
    glfwSetKeyCallback(window_, [](GLFWwindow* w, int key, int scancode, int action, int mods) {
      ImGui_ImplGlfw_KeyCallback(w, key, scancode, action, mods);
      if (action == GLFW_REPEAT) return;
      static_cast<Window*>(glfwGetWindowUserPointer(w))
          ->keys_.on_key(key, action == GLFW_PRESS, mods & GLFW_MOD_CONTROL, mods & GLFW_MOD_SHIFT, mods & GLFW_MOD_ALT);
    });
  }
  ~Window() {
    ImGui_ImplOpenGL3_Shutdown();
    ImGui_ImplGlfw_Shutdown();
    ImGui::DestroyContext();
    glfwDestroyWindow(window_);
    glfwTerminate();
  }
  Window(const Window&) = delete;
  Window& operator=(const Window&) = delete;

  bool open() const { return !glfwWindowShouldClose(window_); }
  void close() { glfwSetWindowShouldClose(window_, GLFW_TRUE); }

  // One frame: events, the app, render into the back buffer (not swapped yet).
  void render(StudioState& s, bool wait_events) {
    if (wait_events)
      glfwWaitEventsTimeout(0.25);  // redraw on input; idle costs nothing
    else
      glfwPollEvents();
    ImGui_ImplOpenGL3_NewFrame();
    ImGui_ImplGlfw_NewFrame();
    keys_.before_frame(ImGui::GetIO());
    ImGui::NewFrame();
    draw_app_frame(s);
    ImGui::Render();
    int w = 0, h = 0;
    glfwGetFramebufferSize(window_, &w, &h);
    glViewport(0, 0, w, h);
    glClearColor(0.1f, 0.1f, 0.1f, 1.0f);
    glClear(GL_COLOR_BUFFER_BIT);
    ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
  }
  void swap() { glfwSwapBuffers(window_); }
  void framebuffer_size(int* w, int* h) const { glfwGetFramebufferSize(window_, w, h); }

 private:
  GLFWwindow* window_ = nullptr;
  KeyQueue keys_;
};

int screenshot(const AppOptions& o) {
  Window win(o.width, o.height, false);
  StudioState s;
  const bool ok = apply_options(s, o);
  // The views' background work (graph layouts) is drawn before the capture; at most a
  // minute of extra frames.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (int i = 0;; ++i) {
    win.render(s, false);
    if (i + 1 >= kScreenshotFrames &&
        (s.background_jobs == 0 || std::chrono::steady_clock::now() > deadline))
      break;
    win.swap();
    if (s.background_jobs > 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  int w = 0, h = 0;
  win.framebuffer_size(&w, &h);
  write_png(o.screenshot, w, h, read_framebuffer(w, h));
  std::printf("wrote %s (%dx%d, %s view%s)\n", o.screenshot.c_str(), w, h, name_of(s.view),
              ok ? "" : ", showing the error");
  if (!ok || o.apply.empty()) return ok ? 0 : 1;
  const PipelineViewState& p = s.pipeline;
  std::printf("apply: %s\n", p.job_message.c_str());
  if (p.job_failed || p.job != PipelineJob::kNone) {
    std::fprintf(stderr, "mpk-studio: error: --apply: %s\n",
                 p.job != PipelineJob::kNone ? "still running after a minute" : p.job_message.c_str());
    return 1;
  }
  return 0;
}

}  // namespace

int run_app(const AppOptions& o) {
  try {
    if (!o.screenshot.empty()) return screenshot(o);
    Window win(o.width, o.height, true);
    StudioState s;
    apply_options(s, o);  // errors show in the window (and on stderr)
    while (win.open() && !s.quit_requested) {
      win.render(s, s.background_jobs == 0);  // keep drawing while a view works in the background
      win.swap();
    }
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "mpk-studio: error: %s\n", e.what());
    return 1;
  }
}

}  // namespace mpk::studio
