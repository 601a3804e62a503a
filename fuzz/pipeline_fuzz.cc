// Fuzz target: the pass pipeline parser (passes/pipeline.h), the pass manager's checks of pass
// names and option values, each pass's own option parsing, and then the pipeline itself on a
// small program (the tiny preset at 16 positions on a 4-SM machine, imported once), verified
// at the end as mpk-opt does. Any input must run or throw mpk::Error; nothing else is
// allowed.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "ir/error.h"
#include "ir/import/import.h"
#include "ir/verifier.h"
#include "passes/pass_manager.h"

namespace {

const mpk::Module& program() {
  static const mpk::Module m = [] {
    mpk::ImportOptions o;
    o.max_seq_len = 16;
    o.machine.sm_count = 4;
    return mpk::import_model("tiny", o);
  }();
  return m;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const mpk::Pipeline p = mpk::parse_pipeline(std::string_view(reinterpret_cast<const char*>(data), size));
    mpk::PassManagerConfig config;
    config.verify_each = false;  // as mpk-opt runs by default: passes see unverified intermediate modules
    mpk::PassManager pm(p, config);
    mpk::Module m = program();
    pm.run(m);
    mpk::verify_or_throw(m);
  } catch (const mpk::Error&) {
  }
  return 0;
}
