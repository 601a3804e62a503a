// Tests of the structure layer's semantic rules (ir/verifier_rules.h) on the hand-built toy
// step of test_modules.h: each module broken in exactly one way yields diagnostics of that
// rule, with a message naming the tensor, operator or task and what is wrong.
#include <gtest/gtest.h>

#include "ir/verifier.h"
#include "tests/ir/test_modules.h"

namespace mpk {
namespace {

using testing::tiny_module;

// The first diagnostic has `rule` and its message contains every piece.
void expect_first(const Module& m, const std::string& rule, const std::vector<std::string>& pieces) {
  const std::vector<Diagnostic> d = verify_module(m);
  ASSERT_FALSE(d.empty()) << "no diagnostic, expected " << rule;
  EXPECT_EQ(d[0].rule, rule) << d[0].message;
  for (const std::string& p : pieces)
    EXPECT_NE(d[0].message.find(p), std::string::npos) << "'" << p << "' not in: " << d[0].message;
}

// All diagnostics carry `rule`; the first one's message contains every piece.
void expect_only(const Module& m, const std::string& rule, const std::vector<std::string>& pieces) {
  const std::vector<Diagnostic> d = verify_module(m);
  ASSERT_FALSE(d.empty()) << "no diagnostic, expected " << rule;
  for (const Diagnostic& x : d) EXPECT_EQ(x.rule, rule) << x.message;
  for (const std::string& p : pieces)
    EXPECT_NE(d[0].message.find(p), std::string::npos) << "'" << p << "' not in: " << d[0].message;
}

Tensor& tensor(Module& m, const std::string& name) { return m.program.tensors.at(m.program.find_tensor(name)); }
TensorId id(const Module& m, const std::string& name) { return m.program.find_tensor(name); }
Task& task_of(Module& m, const std::string& op) {
  for (Task& t : m.graph.tasks)
    if (t.op == m.program.find_op(op)) return t;
  throw Error("no task of " + op);
}

// The toy without events and schedule: the structure rules alone decide.
Module unordered() {
  Module m = tiny_module();
  m.graph.events.clear();
  m.graph.schedule = Schedule{};
  return m;
}

// Replaces op's one task by tasks writing column tiles [cuts[i], cuts[i+1]) of its output
// (a linear: W rows alike).
void tile_linear(Module& m, const std::string& op, const std::vector<std::pair<int64_t, int64_t>>& tiles) {
  const OpId o = m.program.find_op(op);
  auto it = std::find_if(m.graph.tasks.begin(), m.graph.tasks.end(), [&](const Task& t) { return t.op == o; });
  const Task whole = *it;
  it = m.graph.tasks.erase(it);
  for (const auto& [lo, hi] : tiles) {
    Task t = whole;
    t.reads[1].dims[0] = {lo, hi};
    t.writes[0].dims[1] = {lo, hi};
    it = m.graph.tasks.insert(it, t) + 1;
  }
}

TEST(VerifierRules, TensorElementCountAndBytesAreBounded) {
  Module m = tiny_module();
  tensor(m, "k_cache.0").shape = {1, int64_t{1} << 57, 2, 64};
  expect_only(m, "structure.tensor-size", {"tensor 23 'k_cache.0' [1, 144115188075855872, 2, 64]",
                                           "element count overflows int64"});
  Module big = tiny_module();
  tensor(big, "argmax_val").shape = {1, int64_t{1} << 40};
  expect_only(big, "structure.tensor-size", {"'argmax_val' [1, 1099511627776] holds 4398046511104 bytes",
                                             "above the limit of 1099511627776 (1 TiB)"});
  Module step = tiny_module();  // 5 x 512 GiB of activations
  for (const char* n : {"q.0", "qn.0", "qr.0", "attn.0", "o.0"}) tensor(step, n).shape = {1, int64_t{1} << 38};
  expect_only(step, "structure.tensor-size", {"the non-weight tensors hold more than 2199023255552 bytes"});
  Module weights = tiny_module();  // weights do not count in the step's bytes
  for (const char* n : {"model.layers.0.self_attn.q_proj.weight", "model.layers.0.self_attn.o_proj.weight"})
    tensor(weights, n).shape = {2, int64_t{1} << 38};  // 1 TiB each
  for (const Diagnostic& d : verify_module(weights)) EXPECT_NE(d.rule, "structure.tensor-size") << d.message;
}

TEST(VerifierRules, WeightsAreNeverWritten) {
  Module m = tiny_module();
  tensor(m, "tokens").role = TensorRole::kWeight;
  expect_only(m, "structure.role", {"operator 'argmax' writes tensor 'tokens' (weight): weights are read-only"});
}

TEST(VerifierRules, AnInputIsTheTokensOfAnEmbedding) {
  Module m = tiny_module();
  tensor(m, "xn.0").role = TensorRole::kInput;
  expect_only(m, "structure.role", {"operator 'L0.input_norm' writes tensor 'xn.0' (input): only an argmax writes "
                                    "an input (the next step's tokens)"});
  const std::vector<Diagnostic> d = verify_module(m);
  ASSERT_GE(d.size(), 2u);
  EXPECT_NE(d[1].message.find("operator 'L0.q_proj' reads tensor 'xn.0' (input): the runtime supplies only the "
                              "tokens an embedding reads (any other input would read as zeros)"),
            std::string::npos)
      << d[1].message;
  Module w = tiny_module();  // a weight declared input would read as zeros
  tensor(w, "model.norm.weight").role = TensorRole::kInput;
  expect_first(w, "structure.role", {"operator 'final_norm' reads tensor 'model.norm.weight' (input)"});
}

TEST(VerifierRules, ScratchIsNoOperand) {
  Module m = tiny_module();
  tensor(m, "o.0").role = TensorRole::kScratch;
  expect_only(m, "structure.role", {"operator 'L0.o_proj' has tensor 'o.0' (scratch) as an operand"});
}

TEST(VerifierRules, ReadTensorsAreWrittenOrComeFromOutside) {
  Module m = tiny_module();
  tensor(m, "model.norm.weight").role = TensorRole::kActivation;  // [8]: also not of the batch
  expect_first(m, "structure.role", {"operator 'final_norm' reads tensor 'model.norm.weight' (activation), which "
                                    "no operator writes", "it would read as zeros"});
  Module cache = tiny_module();  // a cache nobody appends to
  Operator& att = cache.program.ops[cache.program.find_op("L0.attention")];
  att.inputs[1] = cache.program.add_tensor(Tensor{"stale", DType::kBF16, {1, 4, 1, 4}, TensorRole::kKvCache});
  task_of(cache, "L0.attention").reads[1].tensor = att.inputs[1];
  cache.program.rebuild_use_lists();
  const std::vector<Diagnostic> d = verify_module(cache);
  ASSERT_FALSE(d.empty());
  EXPECT_NE(d[0].message.find("reads tensor 'stale' (kv_cache), which no operator writes"), std::string::npos)
      << d[0].message;
}

TEST(VerifierRules, UnusedTensorsAreRefused) {
  Module m = tiny_module();
  m.program.add_tensor(Tensor{"junk", DType::kF32, {805306368}, TensorRole::kScratch});
  expect_first(m, "structure.unused-tensor", {"tensor 38 'junk' (scratch) is used by no operator and no task"});
  Module program = tiny_module();
  program.graph = TaskGraph{};  // the argmax scratch is only used by tasks
  expect_only(program, "structure.unused-tensor", {"tensor 36 'argmax_val'"});
}

TEST(VerifierRules, OneBatchForAllNonWeightTensors) {
  Module m = tiny_module();
  tensor(m, "argmax_val").shape = {2, 1};
  tensor(m, "argmax_idx").shape = {2, 1};
  expect_only(m, "structure.batch", {"tensor 'argmax_val' has batch (dimension 0) 2, tensor 'tokens' has 1"});
}

TEST(VerifierRules, TokensIndexTheEmbeddingTable) {
  Module m = tiny_module();  // the lm_head keeps the 32-row table: tokens below 32
  const TensorId small = m.program.add_tensor(Tensor{"small", DType::kBF16, {16, 8}, TensorRole::kWeight});
  m.program.ops[m.program.find_op("embed")].inputs[0] = small;
  task_of(m, "embed").reads[0] = full_region(small, {16, 8});
  m.program.rebuild_use_lists();
  expect_only(m, "structure.vocab", {"operator 'argmax' writes tokens 'tokens' below 32, but operator 'embed' reads "
                                     "them as rows of a table of 16 rows"});
}

TEST(VerifierRules, ScratchBelongsToOneOperator) {
  Module m = unordered();
  task_of(m, "lm_head").reads.push_back(full_region(id(m, "argmax_val"), {1, 1}));
  const std::vector<Diagnostic> d = verify_module(m);
  ASSERT_FALSE(d.empty());
  EXPECT_EQ(d[0].rule, "structure.role");
  EXPECT_EQ(d[0].message, "task 20 (lm_head:lm_head) reads scratch tensor 'argmax_val', which belongs to operator "
                          "'argmax'");
  Module lin = unordered();
  const TensorId extra = lin.program.add_tensor(Tensor{"extra", DType::kF32, {1, 4}, TensorRole::kScratch});
  task_of(lin, "L0.q_proj").writes.push_back(full_region(extra, {1, 4}));
  expect_only(lin, "structure.task-regions", {"task 2 (L0.q_proj:linear) uses scratch tensor 'extra', but a linear "
                                              "operator has none"});
}

TEST(VerifierRules, ModuleAttrsAgreeWithTheProgram) {
  const struct {
    const char* key;
    AttrValue value;
    const char* piece;
  } cases[] = {
      {"batch", int64_t{2}, "module attr batch is 2, but tensor 'tokens' (dimension 0) says 1"},
      {"vocab", int64_t{64}, "module attr vocab is 64, but operator 'embed' (its table rows) says 32"},
      {"max_seq_len", int64_t{8}, "module attr max_seq_len is 8, but operator 'L0.kv_append' (its cache positions) "
                                  "says 4"},
      {"hidden", int64_t{16}, "module attr hidden is 16, but operator 'embed' (its output width) says 8"},
      {"num_q_heads", int64_t{4}, "module attr num_q_heads is 4, but operator 'L0.attention' says 2"},
      {"head_dim", int64_t{8}, "module attr head_dim is 8, but operator 'L0.attention' says 4"},
      {"intermediate", int64_t{8}, "module attr intermediate is 8, but operator 'L0.silu_mul' (its output width) "
                                   "says 16"},
      {"num_layers", int64_t{2}, "module attr num_layers is 2, but the program (its attention operators) says 1"},
      {"tied_embeddings", int64_t{0}, "module attr tied_embeddings is 0, but the lm_head (whether it reads the "
                                      "embedding table) says 1"},
      {"tied_embeddings", int64_t{3}, "module attr tied_embeddings must be 0 or 1, is 3"},
      {"batch", std::string("one"), "module attr batch must be an integer"},
      {"max_seq_len", int64_t{-4}, "module attr max_seq_len must be positive, is -4"},
      {"rms_eps", std::numeric_limits<double>::quiet_NaN(), "module attr rms_eps must be a positive finite float"},
      {"architecture", std::string("gpt2"), "module attr architecture must be one of llama, qwen2, qwen3"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.piece);
    Module m = tiny_module();
    m.attrs[c.key] = c.value;
    expect_only(m, "structure.module-attr", {c.piece});
  }
}

TEST(VerifierRules, TasksFollowProgramOrder) {
  Module m = unordered();
  std::swap(m.graph.tasks[3], m.graph.tasks[4]);  // v_proj before k_proj
  expect_only(m, "structure.task-order", {"task 4 (L0.k_proj:linear) comes after task 3 (L0.v_proj:linear), "
                                          "whose operator is later in program order"});
  Module reduce = unordered();
  std::swap(reduce.graph.tasks[21], reduce.graph.tasks[22]);
  expect_only(reduce, "structure.task-order", {"task 22 (argmax:argmax_partial) comes after task 21 "
                                               "(argmax:argmax_reduce)"});
}

TEST(VerifierRules, TaskRegionsAreTheirKinds) {
  struct Case {
    const char* name;
    void (*mutate)(Module&);
    const char* piece;
  };
  const std::vector<Case> cases = {
      {"read_too_small",
       [](Module& m) { task_of(m, "L0.q_proj").reads[0].dims[1] = {0, 4}; },
       "task 2 (L0.q_proj:linear) has reads(xn.0[0:1, 0:4], model.layers.0.self_attn.q_proj.weight[0:8, 0:8]) "
       "writes(q.0[0:1, 0:8]), but its kind's regions (docs/ir.md, \"Tasks\") for what it writes are "
       "reads(xn.0[0:1, 0:8], model.layers.0.self_attn.q_proj.weight[0:8, 0:8]) writes(q.0[0:1, 0:8])"},
      {"read_missing", [](Module& m) { task_of(m, "embed").reads.pop_back(); },
       "task 0 (embed:embedding) has reads(model.embed_tokens.weight[0:32, 0:8]) writes(h.0[0:1, 0:8])"},
      {"extra_write",
       [](Module& m) { task_of(m, "L0.o_proj").writes.push_back(full_region(id(m, "h_mid.0"), {1, 8})); },
       "task 11 (L0.o_proj:linear) has reads("},
      {"no_output", [](Module& m) { task_of(m, "L0.silu_mul").writes[0].tensor = id(m, "gate.0"); },
       "task 16 (L0.silu_mul:silu_mul) writes no region of its output 'act.0'"},
      {"partial_head", [](Module& m) { task_of(m, "L0.q_rope").writes[0].dims[1] = {0, 6}; },
       "task 7 (L0.q_rope:rope) writes qr.0[0:1, 0:6]: not whole heads of 4"},
      {"attention_heads", [](Module& m) { task_of(m, "L0.attention").writes[0].dims[1] = {2, 6}; },
       "task 10 (L0.attention:attention) writes attn.0[0:1, 2:6]: not whole query heads of one kv head"},
      {"empty", [](Module& m) { task_of(m, "L0.k_proj").reads[1].dims[0] = {2, 2}; },
       "task 3 (L0.k_proj:linear) has an empty region model.layers.0.self_attn.k_proj.weight[2:2, 0:8]"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Module m = unordered();
    c.mutate(m);
    expect_only(m, "structure.task-regions", {c.piece});
  }
}

TEST(VerifierRules, TaskBytesAndFlopsAreInRange) {
  Module m = tiny_module();
  m.graph.tasks[4].bytes = -1;
  m.graph.tasks[5].flops = int64_t{1} << 62;
  const std::vector<Diagnostic> d = verify_module(m);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].rule, "structure.task-cost");
  EXPECT_EQ(d[0].message, "task 4 (L0.v_proj:linear) bytes must be in 0..17592186044416, got -1");
  EXPECT_EQ(d[1].message, "task 5 (L0.q_norm:qk_norm) flops must be in 0..1125899906842624, got 4611686018427387904");
}

TEST(VerifierRules, TasksCoverTheirOperatorsOutputsExactly) {
  Module tiled = unordered();
  tile_linear(tiled, "L0.q_proj", {{0, 4}, {4, 8}});
  EXPECT_TRUE(verify_module(tiled).empty()) << verify_module(tiled)[0].message;

  Module gap = unordered();
  tile_linear(gap, "L0.q_proj", {{0, 4}, {5, 8}});
  expect_only(gap, "structure.coverage", {"operator 'L0.q_proj': its tasks write 7 of the 8 elements of 'q.0'",
                                          "a task is missing, or a region is too small"});
  Module overlap = unordered();
  tile_linear(overlap, "L0.q_proj", {{0, 5}, {4, 8}});
  expect_only(overlap, "structure.coverage", {"operator 'L0.q_proj': its tasks write q.0[0:1, 4:5] twice: task 2 "
                                              "(L0.q_proj:linear) and task 3 (L0.q_proj:linear) both write it"});
  Module twice = unordered();
  tile_linear(twice, "L0.q_proj", {{0, 8}, {0, 8}});
  expect_only(twice, "structure.coverage", {"its tasks write q.0[0:1, 0:8] twice"});

  Module missing = unordered();
  missing.graph.tasks.erase(missing.graph.tasks.begin() + 20);  // lm_head
  expect_only(missing, "structure.coverage", {"operator 'lm_head' has no tasks"});
}

TEST(VerifierRules, ArgmaxPartialsReadAllLogitsOnce) {
  Module m = unordered();
  // Two partial tiles over the 32 logits: slots 0 and 1 of [1, 2] scratch.
  tensor(m, "argmax_val").shape = {1, 2};
  tensor(m, "argmax_idx").shape = {1, 2};
  Task& reduce = m.graph.tasks[22];
  for (Region& r : reduce.reads) r.dims[1] = {0, 2};
  Task first = m.graph.tasks[21];
  first.reads[0].dims[1] = {0, 16};
  Task second = first;
  second.reads[0].dims[1] = {16, 32};
  for (Region& r : second.writes) r.dims[1] = {1, 2};
  m.graph.tasks[21] = first;
  m.graph.tasks.insert(m.graph.tasks.begin() + 22, second);
  EXPECT_TRUE(verify_module(m).empty()) << verify_module(m)[0].message;
  m.graph.tasks[22].reads[0].dims[1] = {12, 32};
  expect_only(m, "structure.coverage", {"operator 'argmax': its argmax_partial tasks read logits[0:1, 12:16] twice"});
  m.graph.tasks[22].reads[0].dims[1] = {20, 32};
  expect_only(m, "structure.coverage", {"its argmax_partial tasks read 28 of the 32 elements of 'logits'"});
}

TEST(VerifierRules, OnlyAFusedAttentionReadsWhatItWrites) {
  Module m = tiny_module();
  m.program.ops[m.program.find_op("L0.attn_residual")].outputs = {id(m, "h.0")};
  expect_only(m, "structure.op-signature", {"'L0.attn_residual' (residual_add): 'h.0' is both an input and an "
                                            "output"});
}

}  // namespace
}  // namespace mpk
