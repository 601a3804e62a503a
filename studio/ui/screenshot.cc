// Framebuffer read-back and PNG writing.
#include "studio/ui/screenshot.h"

#include <GL/gl.h>

#include <cstring>

#include "ir/error.h"
#include "stb_image_write.h"

namespace mpk::studio {

std::vector<uint8_t> read_framebuffer(int width, int height) {
  std::vector<uint8_t> rgba(static_cast<size_t>(width) * static_cast<size_t>(height) * 4);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadBuffer(GL_BACK);
  glReadPixels(0, 0, width, height, GL_RGBA, GL_UNSIGNED_BYTE, rgba.data());
  // OpenGL's rows run bottom-up.
  const size_t row = static_cast<size_t>(width) * 4;
  std::vector<uint8_t> tmp(row);
  for (int y = 0; y < height / 2; ++y) {
    uint8_t* a = rgba.data() + static_cast<size_t>(y) * row;
    uint8_t* b = rgba.data() + static_cast<size_t>(height - 1 - y) * row;
    std::memcpy(tmp.data(), a, row);
    std::memcpy(a, b, row);
    std::memcpy(b, tmp.data(), row);
  }
  for (size_t i = 3; i < rgba.size(); i += 4) rgba[i] = 255;  // opaque, whatever GL left in alpha
  return rgba;
}

void write_png(const std::string& path, int width, int height, const std::vector<uint8_t>& rgba) {
  if (rgba.size() != static_cast<size_t>(width) * static_cast<size_t>(height) * 4)
    throw Error("screenshot " + path + ": pixel buffer does not match " + std::to_string(width) +
                "x" + std::to_string(height));
  if (!stbi_write_png(path.c_str(), width, height, 4, rgba.data(), width * 4))
    throw Error("cannot write the screenshot " + path);
}

}  // namespace mpk::studio
