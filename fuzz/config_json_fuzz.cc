// Fuzz target: config.json parsing and import. Any input must either be refused with
// mpk::Error, or give a config whose module builds with every tensor's element count inside
// int64 and passes the verifier; anything else (a crash, a sanitizer report, a hang, an
// accepted config that builds a wrong module) is a finding. Decompose is skipped for speed;
// the bounds of ir/import/limits.h keep what it would do bounded.
#include <cstddef>
#include <cstdint>
#include <string>

#include "ir/error.h"
#include "ir/import/import.h"
#include "ir/verifier.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  mpk::Module m;
  try {
    const mpk::ModelConfig c =
        mpk::parse_model_config_text(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
    m = mpk::build_module(c, mpk::ImportOptions{}, "fuzz");
  } catch (const mpk::Error&) {
    return 0;
  }
  for (const mpk::Tensor& t : m.program.tensors) {
    int64_t n = 1;
    for (int64_t d : t.shape)
      if (d < 0 || __builtin_mul_overflow(n, d, &n)) __builtin_trap();  // an accepted size overflows
  }
  if (!mpk::verify_module(m).empty()) __builtin_trap();  // an accepted config builds a bad module
  return 0;
}
