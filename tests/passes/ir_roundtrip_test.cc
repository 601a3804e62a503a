// The IR's persistence on real modules: every preset, imported and run through the
// default pipeline, verifies, and survives the text form and the binary format field
// by field (print(parse(print(m))) == print(m), binary round trip equal too).
#include <gtest/gtest.h>

#include <filesystem>

#include "ir/import/import.h"
#include "ir/serialize.h"
#include "ir/text.h"
#include "ir/verifier.h"
#include "passes/pass_manager.h"
#include "tests/ir/test_modules.h"

namespace mpk {
namespace {

Module compiled(const std::string& preset, int64_t batch) {
  ImportOptions o;
  o.batch = batch;
  Module m = import_model(preset, o);
  PassManagerConfig cfg;
  cfg.verify_each = true;
  PassManager pm(parse_pipeline(kDefaultPipeline), cfg);
  pm.run(m);
  return m;
}

void expect_round_trips(const Module& m) {
  const std::vector<Diagnostic> d = verify_module(m);
  ASSERT_TRUE(d.empty()) << d.front().rule << ": " << d.front().message;
  ASSERT_FALSE(m.graph.tasks.empty());
  ASSERT_FALSE(m.graph.schedule.empty());

  const std::string text = print_module(m);
  const Module from_text = parse_module(text, "roundtrip.mpk.txt");
  EXPECT_EQ(print_module(from_text), text);
  testing::expect_modules_equal(m, from_text);

  const Module from_binary = module_from_binary(module_to_binary(m), "roundtrip.mpk");
  testing::expect_modules_equal(m, from_binary);
  EXPECT_EQ(print_module(from_binary), text);
}

TEST(IrRoundTrip, TinyAfterDefaultPipeline) { expect_round_trips(compiled("tiny", 1)); }

TEST(IrRoundTrip, TinyQwen3Batch4AfterDefaultPipeline) {
  expect_round_trips(compiled("tiny-qwen3", 4));
}

TEST(IrRoundTrip, SavedFilesLoadInBothFormats) {
  const Module m = compiled("tiny", 2);
  const auto dir = std::filesystem::temp_directory_path() / ("mpk_ir_rt_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string bin = (dir / "m.mpk").string(), txt = (dir / "m.mpk.txt").string();
  save_module(m, bin, Format::kBinary);
  save_module(m, txt, Format::kText);
  testing::expect_modules_equal(m, load_module(bin));
  testing::expect_modules_equal(m, load_module(txt));
  std::filesystem::remove_all(dir);
}

TEST(IrRoundTripSlow, Qwen3_8bAfterDefaultPipeline) { expect_round_trips(compiled("qwen3-8b", 1)); }

}  // namespace
}  // namespace mpk
