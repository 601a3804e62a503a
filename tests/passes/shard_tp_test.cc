// shard-tp and what follows it (docs/ir.md "Tensor parallel", docs/passes.md): the split
// of a decoder layer over ranks, its refusals, the fusions keeping the split, infer-deps'
// all_ranks events, and the verifier's tensor-parallel rules, a cross-rank deadlock among
// them.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "ir/import/import.h"
#include "ir/ops/tensor_parallel.h"
#include "ir/text.h"
#include "ir/verifier.h"
#include "passes/pass_manager.h"
#include "passes/pipeline.h"

namespace mpk {
namespace {

Module tiny(const std::string& preset = "tiny") { return import_model(preset, ImportOptions{}); }

Module compiled(Module m, const std::string& pipeline) {
  PassManagerConfig c;
  c.verify_each = true;
  PassManager(parse_pipeline(pipeline), c).run(m);
  return m;
}

std::string error_of(Module m, const std::string& pipeline) {
  try {
    compiled(std::move(m), pipeline);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

const Tensor& tensor(const Module& m, const std::string& name) {
  const TensorId t = m.program.find_tensor(name);
  EXPECT_GE(t, 0) << name;
  return m.program.tensors.at(t);
}

const Operator& op(const Module& m, const std::string& name) {
  const OpId o = m.program.find_op(name);
  EXPECT_GE(o, 0) << name;
  return m.program.ops.at(o);
}

bool has_rule(const std::vector<Diagnostic>& d, const std::string& rule) {
  return std::any_of(d.begin(), d.end(), [&](const Diagnostic& x) { return x.rule == rule; });
}

TEST(ShardTp, SplitsALayerAsMegatronDoes) {
  const Module m = compiled(tiny("tiny-qwen3"), "shard-tp{ranks=2}");
  EXPECT_EQ(tp_ranks(m), 2);
  const std::string W = "model.layers.1.";
  using Shape = std::vector<int64_t>;
  EXPECT_EQ(tensor(m, W + "self_attn.q_proj.weight").shape, (Shape{128, 256}));  // 2 of 4 heads
  EXPECT_EQ(tensor(m, W + "self_attn.k_proj.weight").shape, (Shape{64, 256}));   // 1 of 2 KV heads
  EXPECT_EQ(tensor(m, W + "self_attn.o_proj.weight").shape, (Shape{256, 128}));  // its input columns
  EXPECT_EQ(tensor(m, W + "mlp.gate_proj.weight").shape, (Shape{256, 256}));
  EXPECT_EQ(tensor(m, W + "mlp.down_proj.weight").shape, (Shape{256, 256}));
  EXPECT_EQ(tensor(m, W + "self_attn.q_norm.weight").shape, (Shape{64}));  // per head: whole
  EXPECT_EQ(tensor(m, "k_cache.1").shape, (Shape{1, 128, 1, 64}));
  EXPECT_EQ(tensor(m, "lm_head.weight").shape, (Shape{256, 256}));  // half the vocabulary
  EXPECT_EQ(tensor(m, "logits").shape, (Shape{1, 256}));
  EXPECT_EQ(attr_str(op(m, "lm_head").attrs, "parallel"), "column");
  EXPECT_EQ(attr_str(op(m, "argmax").attrs, "parallel"), "column");
  EXPECT_EQ(vocab_per_rank(m), 256);
  EXPECT_EQ(attr_int(op(m, "L1.attention").attrs, "num_q_heads"), 2);
  EXPECT_EQ(attr_int(op(m, "L1.attention").attrs, "num_kv_heads"), 1);
  EXPECT_EQ(attr_str(op(m, "L1.q_proj").attrs, "parallel"), "column");
  EXPECT_EQ(attr_str(op(m, "L1.down_proj").attrs, "parallel"), "row");
  EXPECT_EQ(tp_split_dim(m.program, m.program.find_tensor(W + "self_attn.o_proj.weight")), 1);
  EXPECT_EQ(tp_split_dim(m.program, m.program.find_tensor(W + "input_layernorm.weight")), -1);
  // The residual adds after o_proj and down_proj add every rank's partial product.
  const Operator& add = op(m, "L1.mlp_residual");
  EXPECT_EQ(add.kind, OpKind::kAllReduce);
  EXPECT_EQ(m.program.tensors[add.inputs[1]].name, "down.1");
  const std::vector<bool> symmetric = symmetric_tensors(m);
  EXPECT_EQ(std::count(symmetric.begin(), symmetric.end(), true), 4);  // o and down of 2 layers
  EXPECT_TRUE(verify_module(m).empty());
}

// With tied embeddings the embedding reads the LM head's weight whole: the LM head and the
// argmax stay whole on every rank.
TEST(ShardTp, ATiedLmHeadStaysWhole) {
  const Module m = compiled(tiny("tiny-qwen2"), "shard-tp{ranks=2}");
  EXPECT_EQ(tensor(m, "logits").shape, (std::vector<int64_t>{1, 512}));
  EXPECT_EQ(op(m, "lm_head").attrs.count("parallel"), 0u);
  EXPECT_EQ(op(m, "argmax").attrs.count("parallel"), 0u);
  EXPECT_EQ(vocab_per_rank(m), 512);
  EXPECT_TRUE(verify_module(m).empty());
}

TEST(ShardTp, RefusesWhatItCannotSplit) {
  EXPECT_NE(error_of(tiny(), "shard-tp{ranks=3}").find("num_q_heads is 4, which 3 ranks cannot split evenly"),
            std::string::npos);
  EXPECT_NE(error_of(tiny(), "fuse-residual,shard-tp{ranks=2}").find("is fused; shard-tp runs before the fusions"),
            std::string::npos);
  EXPECT_NE(error_of(tiny(), "shard-tp{ranks=2},shard-tp{ranks=2}").find("sharded already"), std::string::npos);
  EXPECT_NE(error_of(tiny(), "decompose,shard-tp{ranks=2}").find("runs before decompose"), std::string::npos);
  EXPECT_NE(error_of(tiny(), "shard-tp{ranks=9}").find("ranks"), std::string::npos);
}

TEST(ShardTp, TheFusionsKeepTheSplit) {
  const Module m = compiled(tiny(), "shard-tp{ranks=2}," + std::string(kDefaultPipeline));
  const Operator& swiglu = op(m, "L0.gate_proj_swiglu");
  EXPECT_EQ(attr_str(swiglu.attrs, "parallel"), "column");
  EXPECT_EQ(m.program.tensors[swiglu.outputs[0]].shape, (std::vector<int64_t>{1, 256}));
  // o_proj stays a plain row-parallel product: the residual is added once, by the all_reduce.
  const Operator& o = op(m, "L0.o_proj");
  EXPECT_EQ(o.inputs.size(), 2u);
  EXPECT_EQ(op(m, "L0.attn_residual").kind, OpKind::kAllReduce);
}

// Every all_reduce task waits, through an all_ranks event, for the tasks that write the
// partial columns it reads on every rank; each of those waits, through an all_ranks event
// of distance 1, for the previous step's all_reduce tasks that read them. Likewise the
// argmax_reduce for the LM head tasks' argmax partials of every rank's vocabulary slice.
TEST(ShardTp, InferDepsOrdersThePartialsOnEveryRank) {
  const Module m = compiled(tiny(), "shard-tp{ranks=2}," + std::string(kDefaultPipeline));
  const auto& tasks = m.graph.tasks;
  int64_t ranked[2] = {0, 0};
  for (const Event& e : m.graph.events) {
    if (!e.all_ranks) continue;
    ++ranked[e.step_distance];
    const std::set<TaskKind> writers = {TaskKind::kLinear, TaskKind::kLmHead};
    const std::set<TaskKind> readers = {TaskKind::kAllReduce, TaskKind::kArgmaxReduce};
    for (TaskId t : e.producers) EXPECT_TRUE((e.step_distance == 0 ? writers : readers).count(tasks[t].kind));
    for (TaskId t : e.consumers) EXPECT_TRUE((e.step_distance == 0 ? readers : writers).count(tasks[t].kind));
  }
  EXPECT_GT(ranked[0], 0);
  EXPECT_GT(ranked[1], 0);
  for (size_t t = 0; t < tasks.size(); ++t) {
    if (tasks[t].kind != TaskKind::kAllReduce && tasks[t].kind != TaskKind::kArgmaxReduce) continue;
    const bool waits = std::any_of(m.graph.events.begin(), m.graph.events.end(), [&](const Event& e) {
      return e.all_ranks && e.step_distance == 0 &&
             std::binary_search(e.consumers.begin(), e.consumers.end(), static_cast<TaskId>(t));
    });
    EXPECT_TRUE(waits) << "task " << t;
  }
  // The text form keeps the flag.
  const Module back = parse_module(print_module(m), "round trip");
  ASSERT_EQ(back.graph.events.size(), m.graph.events.size());
  for (size_t e = 0; e < m.graph.events.size(); ++e) EXPECT_EQ(back.graph.events[e].all_ranks, m.graph.events[e].all_ranks);
  EXPECT_NE(print_module(m).find(" all_ranks producers("), std::string::npos);
}

// The cross-rank edges imply local ones (they order the local copies too), so the
// pruning keeps as few local cross-step events as without tensor parallelism; without
// that, every layer's local order would be cut at its all_reduce and thousands of
// cross-step edges would stay (and infer-deps would take minutes on qwen3-8b).
TEST(ShardTp, CrossRankEdgesStillPruneTheLocalOnes) {
  const Module one = compiled(tiny(), kDefaultPipeline);
  const Module two = compiled(tiny(), "shard-tp{ranks=2}," + std::string(kDefaultPipeline));
  auto local_cross_step = [](const Module& m) {
    return std::count_if(m.graph.events.begin(), m.graph.events.end(),
                         [](const Event& e) { return e.step_distance == 1 && !e.all_ranks; });
  };
  EXPECT_LE(local_cross_step(two), local_cross_step(one));
  EXPECT_LE(two.graph.events.size(), 2 * one.graph.events.size());
}

TEST(ShardTp, AVerifierRuleNeedsAllRanksEventsForTheCrossRankOrder) {
  Module m = compiled(tiny(), "shard-tp{ranks=2}," + std::string(kDefaultPipeline));
  for (Event& e : m.graph.events) e.all_ranks = false;
  const std::vector<Diagnostic> d = verify_module(m);
  ASSERT_TRUE(has_rule(d, "graph.cross-rank")) << (d.empty() ? "" : d[0].rule);
}

TEST(ShardTp, AVerifierRuleNeedsTheTpAttrAndOneSplitPerWeight) {
  Module m = compiled(tiny(), "shard-tp{ranks=2}");
  m.attrs.erase("tp");
  EXPECT_TRUE(has_rule(verify_module(m), "structure.tp"));
  // up_proj reads gate_proj's weight whole, which gate_proj reads split.
  Module k = tiny();
  k.attrs["tp"] = int64_t{1};
  k.program.ops[k.program.find_op("L0.gate_proj")].attrs["parallel"] = std::string("column");
  k.program.ops[k.program.find_op("L0.up_proj")].inputs[1] = k.program.find_tensor("model.layers.0.mlp.gate_proj.weight");
  k.program.rebuild_use_lists();
  EXPECT_TRUE(has_rule(verify_module(k), "structure.tp"));
}

// Every rank runs the same schedule, so a cross-rank wait is a wait on the local copy of
// the graph: an all_reduce task placed on a worker before a task that writes a partial it
// reads waits for that task on every rank, which never comes.
TEST(ShardTp, ACrossRankDeadlockIsFound) {
  Module m = compiled(tiny(), "shard-tp{ranks=2}," + std::string(kDefaultPipeline));
  ASSERT_TRUE(verify_module(m).empty());
  const Event* e = nullptr;
  for (const Event& x : m.graph.events)
    if (x.all_ranks && x.step_distance == 0) e = &x;
  ASSERT_NE(e, nullptr);
  const TaskId writer = e->producers[0], reader = e->consumers[0];
  for (auto& list : m.graph.schedule.workers) list.erase(std::remove(list.begin(), list.end(), reader), list.end());
  for (auto& list : m.graph.schedule.workers) {
    auto it = std::find(list.begin(), list.end(), writer);
    if (it != list.end()) list.insert(it, reader);
  }
  m.graph.touch();
  const std::vector<Diagnostic> d = verify_module(m);
  ASSERT_TRUE(has_rule(d, "schedule.deadlock")) << (d.empty() ? "no diagnostic" : d[0].rule + ": " + d[0].message);
}

}  // namespace
}  // namespace mpk
