// Replays key presses a slow frame missed (studio/ui/key_queue.h).
#include "studio/ui/key_queue.h"

#include <algorithm>

namespace mpk::studio {
namespace {

constexpr int kKeys = static_cast<int>(sizeof(ImGuiIO::KeysDown) / sizeof(bool));
// GLFW's modifier keys: left/right shift, control, alt.
constexpr int kShift[] = {340, 344}, kCtrl[] = {341, 345}, kAlt[] = {342, 346};

bool down(const ImGuiIO& io, const int (&keys)[2]) { return io.KeysDown[keys[0]] || io.KeysDown[keys[1]]; }

}  // namespace

void KeyQueue::on_key(int key, bool is_down, bool ctrl, bool shift, bool alt) {
  if (key < 0 || key >= kKeys || !is_down) return;
  pending_.push_back({key, ctrl, shift, alt});
}

void KeyQueue::before_frame(ImGuiIO& io) {
  for (int key : held_) io.KeysDown[key] = false;
  held_.clear();
  if (mods_held_) {  // back to what the keys say, as the backend sets them
    io.KeyCtrl = down(io, kCtrl);
    io.KeyShift = down(io, kShift);
    io.KeyAlt = down(io, kAlt);
    mods_held_ = false;
  }
  std::deque<Press> later;
  while (!pending_.empty()) {
    const Press p = pending_.front();
    pending_.pop_front();
    if (io.KeysDown[p.key] && std::find(held_.begin(), held_.end(), p.key) == held_.end()) continue;  // seen live
    if (std::find(held_.begin(), held_.end(), p.key) != held_.end()) {
      later.push_back(p);  // pressed again: the next frame
      continue;
    }
    io.KeysDown[p.key] = true;
    held_.push_back(p.key);
    if (p.ctrl || p.shift || p.alt) {
      io.KeyCtrl = p.ctrl;
      io.KeyShift = p.shift;
      io.KeyAlt = p.alt;
      mods_held_ = true;
    }
  }
  pending_ = std::move(later);
}

}  // namespace mpk::studio
