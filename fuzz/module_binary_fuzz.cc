// Fuzz target: the binary module reader (ir/serialize.h module_from_binary: the protobuf parse,
// the id and enum checks) and the verifier it always runs. Any input must either load as a
// verified module or throw mpk::Error; nothing else (a crash, a sanitizer report, a hang).
#include <cstddef>
#include <cstdint>
#include <string>

#include "ir/error.h"
#include "ir/serialize.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    (void)mpk::module_from_binary(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
  } catch (const mpk::Error&) {
  }
  return 0;
}
