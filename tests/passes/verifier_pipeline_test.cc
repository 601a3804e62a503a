// The verifier against the real pipeline: every module the passes produce (presets, batch
// 1..8, every policy, split and cooperative decompositions) verifies; and on those modules,
// every single structural change that could change what a backend computes (a task
// deleted, a region shrunk in any dimension, a task moved to another operator, tasks
// swapped) is refused by the structure layer.
#include <gtest/gtest.h>

#include "ir/import/import.h"
#include "ir/verifier.h"
#include "passes/pass_manager.h"

namespace mpk {
namespace {

Module compiled(const std::string& preset, int64_t batch, int64_t seq, const std::string& pipeline,
                int32_t sm_count = MachineModel{}.sm_count) {
  ImportOptions o;
  o.batch = batch;
  o.max_seq_len = seq;
  o.machine.sm_count = sm_count;
  Module m = import_model(preset, o);
  PassManagerConfig c;
  c.verify_each = true;
  PassManager(parse_pipeline(pipeline), c).run(m);
  return m;
}

TEST(VerifierPipeline, EveryPipelineOutputVerifies) {
  const char* pipelines[] = {
      kDefaultPipeline,
      "decompose,infer-deps,assign-sm{policy=round-robin}",
      "fuse-residual,fuse-norm,fuse-rope,decompose{attention-splits=3},infer-deps,assign-sm{policy=locality}",
      "fuse-residual,fuse-norm,fuse-rope,fuse-attention,fuse-swiglu,fuse-argmax,decompose{coop=on,attention-splits=4},"
      "infer-deps,assign-sm{policy=pinned}",
      "fuse-rope,fuse-attention,fuse-argmax,decompose{coop=off,tile=8,lm-head-tile=64,elementwise-tile=64,"
      "argmax-tile=100,attention-splits=2},infer-deps{prune-same-step=false},assign-sm{workers=7}",
      "fuse-norm{lm-head=false},fuse-swiglu,decompose{coop=on,coop-unit=16},infer-deps,assign-sm",
      "shard-tp{ranks=2},fuse-residual,fuse-norm,fuse-rope,fuse-attention,fuse-swiglu,fuse-argmax,"
      "decompose{coop=on,attention-splits=2},infer-deps,assign-sm{policy=critical-path}",
      "shard-tp{ranks=1},decompose,infer-deps,assign-sm{policy=round-robin}",
  };
  for (const char* preset : {"tiny", "tiny-qwen2", "tiny-qwen3"})
    for (int64_t batch = 1; batch <= kMaxBatch; batch += 3)
      for (const char* pipeline : pipelines) {
        SCOPED_TRACE(std::string(preset) + " batch " + std::to_string(batch) + ": " + pipeline);
        Module m;
        ASSERT_NO_THROW(m = compiled(preset, batch, 0, pipeline));
        const std::vector<Diagnostic> d = verify_module(m);
        EXPECT_TRUE(d.empty()) << d[0].rule << ": " << d[0].message;
      }
}

// Without events or schedule, so that only the structure layer decides.
Module unordered(Module m) {
  m.graph.events.clear();
  m.graph.schedule = Schedule{};
  return m;
}

void expect_refused(const Module& m, const std::string& what) {
  EXPECT_FALSE(verify_structure(m).empty()) << what << " was accepted";
}

void check_mutations(const Module& compiled_module) {
  const Module base = unordered(compiled_module);
  ASSERT_TRUE(verify_module(base).empty());
  const auto n = static_cast<TaskId>(base.graph.tasks.size());
  for (TaskId t = 0; t < n; ++t) {
    const std::string who = describe_task(base, t);
    Module m = base;
    m.graph.tasks.erase(m.graph.tasks.begin() + t);
    expect_refused(m, who + " deleted");
    for (const bool writes : {true, false}) {
      const auto& regions = writes ? base.graph.tasks[t].writes : base.graph.tasks[t].reads;
      for (size_t r = 0; r < regions.size(); ++r)
        for (size_t d = 0; d < regions[r].dims.size(); ++d) {
          Module s = base;
          Region& x = (writes ? s.graph.tasks[t].writes : s.graph.tasks[t].reads)[r];
          --x.dims[d].hi;
          expect_refused(s, who + (writes ? " write " : " read ") + std::to_string(r) + " shrunk in dimension " +
                                std::to_string(d));
        }
    }
    if (t + 1 < n && base.graph.tasks[t + 1].op != base.graph.tasks[t].op) {
      Module moved = base;  // the next task's operator, whose kind may well match
      moved.graph.tasks[t].op = base.graph.tasks[t + 1].op;
      expect_refused(moved, who + " moved to the next operator");
      Module swapped = base;
      std::swap(swapped.graph.tasks[t], swapped.graph.tasks[t + 1]);
      expect_refused(swapped, who + " swapped with the next task");
    }
  }
}

// On 16 SMs: fewer tiles and shares, the same forms.
TEST(VerifierPipeline, StructuralMutationsOfTinyAreRefused) {
  check_mutations(compiled("tiny", 2, 0, kDefaultPipeline, 16));
}

TEST(VerifierPipeline, StructuralMutationsOfSplitAttentionAreRefused) {
  check_mutations(compiled("tiny-qwen3", 1, 1024, kDefaultPipeline, 16));
}

TEST(VerifierPipeline, StructuralMutationsOfCooperativeLinearsAreRefused) {
  check_mutations(compiled("tiny", 1, 0, default_pipeline_with("critical-path", "decompose{coop=on}"), 16));
}

}  // namespace
}  // namespace mpk
