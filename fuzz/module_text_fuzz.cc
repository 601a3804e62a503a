// Fuzz target: the text module parser and the verifier. Any input must either parse and
// verify, or throw mpk::Error; nothing else (a crash, a sanitizer report, a hang) is allowed.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "ir/error.h"
#include "ir/text.h"
#include "ir/verifier.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const mpk::Module m = mpk::parse_module(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
    (void)mpk::verify_module(m);
  } catch (const mpk::Error&) {
  }
  return 0;
}
