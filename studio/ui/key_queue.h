// Key presses that a slow frame would lose. ImGui 1.86 reads keys as "down now"
// (io.KeysDown), and its GLFW backend sets them as events arrive, so a key pressed and
// released between two frames was never down at a frame: on a slow frame the press is
// lost. KeyQueue hears every key event (the window chains it after the backend's
// callback) and, before each frame, holds down for that frame a key whose press no frame
// saw, with the modifiers held when it was pressed, releasing it before the next frame.
// Key codes are GLFW's, as io.KeysDown indexes them.
#pragma once

#include <deque>
#include <vector>

#include "imgui.h"

namespace mpk::studio {

class KeyQueue {
 public:
  // A key event as the window system reports it.
  void on_key(int key, bool down, bool ctrl, bool shift, bool alt);
  // Call before ImGui::NewFrame: releases what the last call held, then holds each key
  // pressed since (once a frame per key) that is up again.
  void before_frame(ImGuiIO& io);

 private:
  struct Press {
    int key;
    bool ctrl, shift, alt;
  };
  std::deque<Press> pending_;
  std::vector<int> held_;  // keys held down for the current frame only
  bool mods_held_ = false;
};

}  // namespace mpk::studio
