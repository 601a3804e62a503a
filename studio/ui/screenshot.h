// Screenshots: read the current OpenGL framebuffer back and write it as a PNG
// (stb_image_write). Used by `mpk-studio --screenshot` (studio/window.cc), which renders
// a few frames so the layout settles, then captures the last one.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mpk::studio {

// RGBA pixels of the bound framebuffer's back buffer, top row first.
std::vector<uint8_t> read_framebuffer(int width, int height);

// Writes RGBA pixels (top row first) to `path`. Throws mpk::Error naming the file.
void write_png(const std::string& path, int width, int height, const std::vector<uint8_t>& rgba);

}  // namespace mpk::studio
