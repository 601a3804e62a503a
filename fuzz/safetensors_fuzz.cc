// Fuzz target: the safetensors header parser on an in-memory file. Any input must either be
// refused with mpk::Error or describe tensors that tile the data exactly (each inside the
// image, in order of offset from the header's end to the image's end, byte sizes matching
// dtype and shape); reading every accepted tensor's bytes lets the sanitizers check that.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "ir/error.h"
#include "runtime/weights/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  mpk::SafetensorsHeader h;
  try {
    h = mpk::parse_safetensors(data, size, "fuzz");
  } catch (const mpk::Error&) {
    return 0;
  }
  std::vector<std::pair<uint64_t, uint64_t>> spans;
  uint64_t sum = 0;
  for (const auto& [name, e] : h.tensors) {
    if (e.offset < h.data_start || e.offset > size || e.size > size - e.offset) __builtin_trap();
    for (uint64_t i = 0; i < e.size; ++i) sum += data[e.offset + i];
    spans.emplace_back(e.offset, e.size);
  }
  std::sort(spans.begin(), spans.end());
  uint64_t at = h.data_start;
  for (const auto& [offset, bytes] : spans) {
    if (offset != at) __builtin_trap();  // an overlap or a gap was accepted
    at += bytes;
  }
  if (at != size) __builtin_trap();  // trailing bytes were accepted
  return static_cast<int>(sum & 0);
}
