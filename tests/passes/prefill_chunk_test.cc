// prefill-chunk and what follows it (docs/ir.md "Prefill chunks"): the default pipeline
// over a chunk, decompose's refusals for a fused attention that could not append before
// it attends, and the verifier's rules on a chunk's rows and head. The rewrite itself has
// golden cases (tests/passes/golden/prefill_chunk.mpkt).
#include <gtest/gtest.h>

#include <algorithm>

#include "ir/import/import.h"
#include "ir/row_positions.h"
#include "ir/verifier.h"
#include "passes/pass_manager.h"
#include "passes/pipeline.h"

namespace mpk {
namespace {

Module compiled(const std::string& preset, const std::string& pipeline) {
  Module m = import_model(preset, ImportOptions{});
  PassManagerConfig c;
  c.verify_each = true;
  PassManager(parse_pipeline(pipeline), c).run(m);
  return m;
}

std::string error_of(const std::string& preset, const std::string& pipeline) {
  try {
    compiled(preset, pipeline);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

bool has_rule(const std::vector<Diagnostic>& d, const std::string& rule) {
  return std::any_of(d.begin(), d.end(), [&](const Diagnostic& x) { return x.rule == rule; });
}

TEST(PrefillChunk, TheDefaultPipelineSchedulesAChunkOfEveryPreset) {
  for (const char* preset : {"tiny", "tiny-qwen2", "tiny-qwen3"}) {
    const Module m = compiled(preset, std::string("prefill-chunk{rows=16},") + kDefaultPipeline);
    EXPECT_EQ(chunk_rows(m), 16) << preset;
    EXPECT_TRUE(verify_module(m).empty()) << preset;
    for (const Operator& op : m.program.ops) EXPECT_TRUE(op.layer >= 0 || op.kind == OpKind::kEmbedding) << op.name;
    // A chunk's attention is split to fill the SMs: tiny's 128 positions in 4 splits per kv
    // head, the kv_append tasks first, over the chunk's 16 rows.
    // The merges spread over the SMs by rows: every kv head's 16 rows in one-row tasks.
    const int64_t nkv = attr_int(m.attrs, "num_kv_heads"), layers = attr_int(m.attrs, "num_layers");
    int64_t partials = 0, merges = 0, merged_rows = 0;
    for (const Task& t : m.graph.tasks) {
      if (t.kind == TaskKind::kAttentionPartial) ++partials;
      if (t.kind == TaskKind::kKvAppend) EXPECT_EQ(t.reads[0].dims[0], (Range{0, 16})) << preset;
      if (t.kind == TaskKind::kAttentionMerge) {
        ++merges;
        merged_rows += t.writes[0].dims[0].size();
        EXPECT_EQ(t.writes[0].dims[0].size(), 1) << preset;
      }
    }
    EXPECT_EQ(partials, 4 * nkv * layers) << preset;
    EXPECT_EQ(merges, 16 * nkv * layers) << preset;
    EXPECT_EQ(merged_rows, 16 * nkv * layers) << preset;
  }
}

TEST(PrefillChunk, DecomposeRefusesAFusedAttentionThatCouldNotAppendFirst) {
  const std::string fused = "prefill-chunk{rows=8},fuse-rope,fuse-attention,";
  EXPECT_NE(error_of("tiny", fused + "decompose{attention-splits=1,attention-heads=1}").find("take whole groups"),
            std::string::npos);
  EXPECT_NE(error_of("tiny", fused + "decompose{attention-rows=3}").find("whole sequences"), std::string::npos);
  // Split, its kv_append tasks come first, so the partials may take any heads.
  EXPECT_EQ(error_of("tiny", fused + "decompose{attention-splits=2,attention-heads=1},infer-deps,assign-sm"), "");
  // Unfused, the kv_append operator comes first: fewer heads and rows per task are fine.
  EXPECT_EQ(error_of("tiny", "prefill-chunk{rows=8},decompose{attention-heads=1,attention-rows=3},infer-deps,"
                             "assign-sm"),
            "");
}

TEST(PrefillChunk, TheVerifierHoldsTheRowsToTheCachesAndAChunkWithoutAHead) {
  Module m = compiled("tiny", "prefill-chunk{rows=4}");
  EXPECT_TRUE(verify_module(m).empty());
  m.attrs["chunk"] = int64_t{2};  // 4 rows per sequence are not 2
  EXPECT_TRUE(has_rule(verify_module(m), "structure.batch"));
  Module decode = import_model("tiny", ImportOptions{});
  decode.attrs["chunk"] = int64_t{1};
  EXPECT_TRUE(verify_module(decode).empty());
  decode.attrs["chunk"] = int64_t{3};  // rows of one are not 3 per sequence
  EXPECT_TRUE(has_rule(verify_module(decode), "structure.batch"));
  // Rows and caches that agree with chunk 4, but an LM head and an argmax: not a chunk.
  ImportOptions four;
  four.batch = 4;
  Module headed = import_model("tiny", four);
  for (Tensor& t : headed.program.tensors)
    if (t.role == TensorRole::kKvCache) t.shape[0] = 1;
  headed.attrs["batch"] = int64_t{1};
  headed.attrs["chunk"] = int64_t{4};
  const std::vector<Diagnostic> d = verify_module(headed);
  EXPECT_TRUE(has_rule(d, "structure.module-attr"));
  EXPECT_FALSE(has_rule(d, "structure.batch"));
}

}  // namespace
}  // namespace mpk
