// The device sources (runtime/device/*.cuh), embedded into the library at build time,
// that every generated megakernel includes.
#pragma once

#include <string>
#include <vector>

namespace mpk {

struct DeviceSource {
  std::string path;  // relative to the repository root, e.g. "runtime/device/worker.cuh"
  std::string text;
};

const std::vector<DeviceSource>& device_sources();

}  // namespace mpk
