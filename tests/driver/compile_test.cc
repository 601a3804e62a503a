// Tests of driver/compile.h: a preset compiles through the default pipeline (or a given
// one) into a verified, scheduled module that records what ran; a scheduled .mpk is used
// as it is; a pipeline is checked before any pass runs and reports each pass to its
// hook; bad models and steps beyond max_seq_len are refused with a message.
#include "driver/compile.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "driver_test_util.h"
#include "ir/error.h"
#include "ir/import/import.h"
#include "ir/serialize.h"
#include "ir/verifier.h"
#include "passes/pipeline.h"
#include "runtime/device/abi.cuh"

namespace mpk {
namespace {

using testing::DriverTest;
using testing::error_of;

TEST_F(DriverTest, PresetCompilesThroughTheDefaultPipeline) {
  const Compiled c = testing::tiny("round-robin");
  EXPECT_EQ(c.pipeline, default_pipeline_with("round-robin"));
  EXPECT_EQ(c.module.provenance.source, "preset:tiny");
  EXPECT_EQ(c.module.provenance.pipeline, c.pipeline);
  EXPECT_EQ(c.module.graph.schedule.policy, "round-robin");
  EXPECT_FALSE(c.module.graph.tasks.empty());
  EXPECT_TRUE(verify_module(c.module).empty());
  EXPECT_GE(c.compile_s, 0);

  CompileRequest r;
  r.model = "tiny-qwen3";
  r.batch = 2;
  r.pipeline = "decompose{tile=32},infer-deps,assign-sm{policy=locality,workers=8}";
  const Compiled q = compile(r);
  EXPECT_EQ(q.pipeline, r.pipeline);
  EXPECT_EQ(q.module.graph.schedule.workers.size(), 8u);
  EXPECT_EQ(attr_int(q.module.attrs, "batch"), 2);
}

TEST_F(DriverTest, ScheduledModuleIsUsedAsItIs) {
  const Compiled c = testing::tiny();
  save_module(c.module, path("tiny.mpk"), Format::kBinary);
  CompileRequest r;
  r.model = path("tiny.mpk");
  const Compiled again = compile(r);
  EXPECT_EQ(again.pipeline, "");
  EXPECT_EQ(module_to_binary(again.module), module_to_binary(c.module));

  // A relative module path is also looked for next to a given folder.
  r.model = "tiny.mpk";
  r.relative_to = dir_.string();
  EXPECT_EQ(module_to_binary(compile(r).module), module_to_binary(c.module));
}

TEST_F(DriverTest, PassPipelineIsCheckedFirstAndReportsEachPass) {
  EXPECT_NE(error_of([] { PassPipeline p("decompose{"); }).find("pipeline:"), std::string::npos);
  EXPECT_NE(error_of([] { PassPipeline p("decompose,fuse-all"); }).find("unknown pass 'fuse-all'"),
            std::string::npos);
  EXPECT_NE(error_of([] { PassPipeline p("decompose{tiles=3}"); }).find("unknown option 'tiles'"),
            std::string::npos);

  PassPipeline p("decompose,infer-deps,assign-sm{policy=critical-path}");
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p.pass(2), "assign-sm");
  Module m = import_model("tiny", ImportOptions{});
  std::vector<size_t> seen;
  p.run(m, [&](size_t i) { seen.push_back(i); });
  EXPECT_EQ(seen, (std::vector<size_t>{0, 1, 2}));
  EXPECT_EQ(m.provenance.pipeline, "decompose,infer-deps,assign-sm{policy=critical-path}");
  EXPECT_FALSE(m.graph.schedule.empty());

  // A hook that throws stops the pipeline before the pass.
  Module stopped = import_model("tiny", ImportOptions{});
  EXPECT_THROW(p.run(stopped, [](size_t i) {
    if (i == 1) throw Error("stop");
  }), Error);
  EXPECT_TRUE(stopped.graph.schedule.empty());
}

TEST_F(DriverTest, RecompileRederivesTheTaskGraphAsCompilingTheModelWould) {
  const std::string locality = default_pipeline_with("locality", "decompose{tile=32}");
  Module m = testing::tiny().module;  // compiled: fusions, decompose, critical-path
  std::vector<size_t> seen;
  PassPipeline(locality).recompile(m, [&](size_t i) { seen.push_back(i); });
  verify_or_throw(m);
  CompileRequest r;
  r.model = "tiny";
  r.pipeline = locality;
  EXPECT_EQ(module_to_binary(m), module_to_binary(compile(r).module));
  // The fusions were not run again: progress counts from decompose.
  const size_t fusions = parse_pipeline(kDefaultFusions).size();
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.front(), fusions);
  EXPECT_EQ(seen.back(), fusions + 2);

  // Without decompose, the passes run over the task graph as it is.
  const std::string before = m.provenance.pipeline;
  PassPipeline("assign-sm{policy=round-robin}").recompile(m);
  EXPECT_EQ(m.provenance.pipeline, before + ",assign-sm{policy=round-robin}");
  EXPECT_EQ(m.graph.schedule.policy, "round-robin");

  // A pipeline without program passes starts from the stored program as it is: the
  // result is the model compiled with the module's fusions and that pipeline.
  const std::string plain = "decompose,infer-deps,assign-sm{policy=round-robin}";
  Module stored = testing::tiny().module;
  PassPipeline(plain).recompile(stored);
  verify_or_throw(stored);
  CompileRequest fused = r;
  fused.pipeline = std::string(kDefaultFusions) + "," + plain;
  EXPECT_EQ(module_to_binary(stored), module_to_binary(compile(fused).module));
  EXPECT_EQ(stored.provenance.pipeline, fused.pipeline);

  // Program passes that start with the module's own run only those after them.
  CompileRequest some = r;
  some.pipeline = "fuse-residual,fuse-norm," + plain;
  Module partly = compile(some).module;
  std::vector<size_t> ran;
  PassPipeline(fused.pipeline).recompile(partly, [&](size_t i) { ran.push_back(i); });
  EXPECT_EQ(module_to_binary(partly), module_to_binary(compile(fused).module));
  ASSERT_FALSE(ran.empty());
  EXPECT_EQ(ran.front(), 2u);  // fuse-residual and fuse-norm ran before

  // Program passes that do not start with the module's are refused; the module is left
  // as it was.
  const std::string bytes = module_to_binary(m);
  const std::string error = error_of([&] { PassPipeline("fuse-norm," + plain).recompile(m); });
  EXPECT_NE(error.find("the pipeline's passes before decompose ('fuse-norm') do not start with the "
                       "module's ('fuse-residual,"),
            std::string::npos) << error;
  EXPECT_EQ(module_to_binary(m), bytes);

  // A module without tasks runs the whole pipeline.
  Module fresh = import_model("tiny", ImportOptions{});
  PassPipeline(locality).recompile(fresh);
  EXPECT_EQ(module_to_binary(fresh), module_to_binary(compile(r).module));
}

TEST_F(DriverTest, BadModelsAndStepsAreRefused) {
  CompileRequest r;
  r.model = "no-such-model";
  EXPECT_NE(error_of([&] { compile(r); }).find("no-such-model"), std::string::npos);
  r.model = "tiny";
  r.pipeline = "decompose,infer-deps";  // no schedule: the verifier passes, nothing to run
  EXPECT_TRUE(compile(r).module.graph.schedule.empty());
  const Compiled c = testing::tiny();
  const int64_t max_seq = attr_int(c.module.attrs, "max_seq_len");
  EXPECT_NO_THROW(check_steps_fit(c.module, max_seq));
  EXPECT_NE(error_of([&] { check_steps_fit(c.module, max_seq + 1); }).find("exceeds the module's max_seq_len"),
            std::string::npos);
}

// A prefill chunk's rows by the model's hidden size and the prefill's positions E: for
// E up to the split-K chunk, that chunk (32 where 32 rows of normed x fit a chunk's x
// budget whole, else 16); 64 for E up to 64; else 128.
TEST(DriverCompile, AutoPrefillChunkFollowsThePrefillsLength) {
  EXPECT_EQ(auto_prefill_chunk(2048, 20), 32);  // llama-3.2-1b
  EXPECT_EQ(auto_prefill_chunk(4096, 16), 16);  // qwen3-8b
  EXPECT_EQ(auto_prefill_chunk(4096, 17), 64);
  EXPECT_EQ(auto_prefill_chunk(2048, 64), 64);
  EXPECT_EQ(auto_prefill_chunk(2048, 65), 128);
  EXPECT_EQ(auto_prefill_chunk(4096, 511), 128);
  for (int64_t hidden : {64, 1024, 2048, 2176, 3072, 4096, 8192}) {
    const int64_t c = auto_prefill_chunk(hidden, 1);
    EXPECT_TRUE(c == 16 || c == 32) << hidden;
    EXPECT_EQ(c == 32, abi::tc_whole_x_bytes(32, hidden, true) <= abi::tc_x_budget(true, 32)) << hidden;
  }
}

}  // namespace
}  // namespace mpk
