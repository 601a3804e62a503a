// Checkpoint directories for the hostile-input tests: the tiny preset's config.json and
// model.safetensors (random weights), and a safetensors file as an editable image (header
// JSON + data bytes) so that a test can corrupt exactly one thing.
#pragma once

#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "ir/import/import.h"
#include "runtime/weights/weights.h"

namespace mpk::hostile {

inline void write_tiny_checkpoint(const std::string& dir) {
  const Module m = import_model("tiny", ImportOptions{});
  write_checkpoint(m, random_weights(m, 1), dir);
}

struct SafetensorsImage {
  nlohmann::json header;
  std::string data;  // the bytes after the header

  static SafetensorsImage read(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    const std::string bytes = s.str();
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<uint8_t>(bytes[static_cast<size_t>(i)]);
    return {nlohmann::json::parse(bytes.substr(8, n)), bytes.substr(8 + n)};
  }

  // The byte offset of tensor `name`'s data within `data`.
  uint64_t begin(const std::string& name) const { return header.at(name).at("data_offsets")[0].get<uint64_t>(); }

  void write(const std::string& path) const {
    std::string text = header.dump();
    while ((8 + text.size()) % 8 != 0) text += ' ';
    std::string out(8, '\0');
    for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<char>(static_cast<uint64_t>(text.size()) >> (8 * i));
    std::ofstream(path, std::ios::binary | std::ios::trunc) << out << text << data;
  }
};

}  // namespace mpk::hostile
