// Tests of the layered verifier (ir/verifier.h): the hand-built modules pass, and for
// every rule a module broken in exactly that way yields diagnostics of that rule only,
// with a message naming the objects involved. Includes a schedule deadlock (two
// workers, each waiting on a task queued after the other's).
#include <gtest/gtest.h>

#include "ir/verifier.h"
#include "tests/ir/test_modules.h"

namespace mpk {
namespace {

using testing::ring_module;
using testing::tiny_module;

// All diagnostics carry `rule`; the first one's message contains every piece.
void expect_only(const Module& m, const std::string& rule, const std::vector<std::string>& pieces) {
  const std::vector<Diagnostic> d = verify_module(m);
  ASSERT_FALSE(d.empty()) << "no diagnostic, expected " << rule;
  for (const Diagnostic& x : d) EXPECT_EQ(x.rule, rule) << x.message;
  for (const std::string& p : pieces)
    EXPECT_NE(d[0].message.find(p), std::string::npos)
        << "'" << p << "' not in: " << d[0].message;
}

TEST(Verifier, HandBuiltModulesPass) {
  const Module m = tiny_module();
  EXPECT_TRUE(verify_structure(m).empty());
  EXPECT_TRUE(verify_graph(m).empty());
  EXPECT_TRUE(verify_schedule(m).empty());
  EXPECT_NO_THROW(verify_or_throw(m));
  Module ring = ring_module();
  ring.graph.events.push_back(Event{{2}, {0}, 1, 1});
  const auto d = verify_module(ring);
  EXPECT_TRUE(d.empty()) << d[0].rule << ": " << d[0].message;
}

TEST(Verifier, GraphWithoutEventsIsNotYetOrdered) {
  Module m = tiny_module();
  m.graph.events.clear();
  m.graph.schedule = Schedule{};
  EXPECT_TRUE(verify_module(m).empty());
}

TEST(Verifier, DuplicateName) {
  Module m = tiny_module();
  m.program.tensors[17].name = "q.0";  // k.0
  expect_only(m, "structure.duplicate-name", {"tensor 17 'q.0'"});
  Module o = tiny_module();
  o.program.ops[3].name = "L0.q_proj";
  expect_only(o, "structure.duplicate-name", {"operator 3 'L0.q_proj'"});
}

TEST(Verifier, BadEnum) {
  Module m = tiny_module();
  m.program.tensors[5].role = static_cast<TensorRole>(40);
  expect_only(m, "structure.bad-enum", {"tensor 5", "role value 40"});
  Module t = tiny_module();
  t.graph.tasks[3].kind = static_cast<TaskKind>(kNumTaskKinds);
  expect_only(t, "structure.bad-enum", {"task 3 has kind value " + std::to_string(kNumTaskKinds)});
}

TEST(Verifier, BadShape) {
  Module m = tiny_module();
  m.program.add_tensor(Tensor{"unused", DType::kF32, {4, 0}, TensorRole::kScratch});
  expect_only(m, "structure.bad-shape", {"'unused'", "dimension 1 = 0"});
}

TEST(Verifier, UnknownTensor) {
  Module m = tiny_module();
  m.program.ops[4].outputs[0] = 300;
  expect_only(m, "structure.unknown-tensor", {"operator 4 'L0.v_proj' output 0 refers to tensor 300"});
  Module t = tiny_module();
  t.graph.tasks[6].reads[1].tensor = -2;
  expect_only(t, "structure.unknown-tensor", {"task 6 read 1 refers to tensor -2"});
}

TEST(Verifier, RegionRank) {
  Module m = tiny_module();
  m.graph.tasks[9].writes[0].dims.pop_back();  // k_cache.0 is rank 4
  expect_only(m, "structure.region-rank", {"task 9 write 0 k_cache.0[0:1, 0:4, 0:1]", "rank 3",
                                           "has rank 4"});
}

TEST(Verifier, RegionOutOfBounds) {
  Module m = tiny_module();
  m.graph.tasks[2].reads[1].dims[0].hi = 9;
  expect_only(m, "structure.region-out-of-bounds",
              {"task 2 read 1", "dimension 0 range 0:9 is not inside 0:8"});
  Module inverted = tiny_module();
  inverted.graph.tasks[2].writes[0].dims[1] = {5, 3};
  expect_only(inverted, "structure.region-out-of-bounds", {"range 5:3"});
  Module negative = tiny_module();
  negative.graph.tasks[2].writes[0].dims[1].lo = -1;
  expect_only(negative, "structure.region-out-of-bounds", {"range -1:8"});
}

// One broken signature per operator kind.
TEST(Verifier, OpSignaturePerKind) {
  struct Case {
    std::string name;
    void (*mutate)(Module&);
    std::vector<std::string> pieces;
  };
  const std::vector<Case> cases = {
      {"embedding",
       [](Module& m) { std::swap(m.program.ops[0].inputs[0], m.program.ops[0].inputs[1]); },
       {"'embed' (embedding)", "table 'tokens' must have rank 2, has shape [1]"}},
      {"embedding_output",
       [](Module& m) { m.program.ops[0].outputs[0] = m.program.find_tensor("k_cache.0"); },
       {"'embed' (embedding)", "y 'k_cache.0' must have rank 2"}},
      {"rms_norm",
       [](Module& m) { m.program.ops[m.program.find_op("L0.input_norm")].attrs.erase("eps"); },
       {"'L0.input_norm' (rms_norm)", "missing attribute 'eps'"}},
      {"linear",
       [](Module& m) {
         m.program.tensors[m.program.find_tensor("model.layers.0.self_attn.q_proj.weight")].shape = {8, 9};
       },
       {"'L0.q_proj' (linear)", "W dimension 1 (K) is 9, expected 8"}},
      {"qk_norm",
       [](Module& m) { m.program.ops[m.program.find_op("L0.k_norm")].attrs["head_dim"] = int64_t{3}; },
       {"'L0.k_norm' (qk_norm)", "w length (head_dim) is 4, expected 3"}},
      {"rope",
       [](Module& m) {
         m.program.ops[m.program.find_op("L0.q_rope")].attrs["rope_type"] = std::string("yarn");
       },
       {"'L0.q_rope' (rope)", "rope_type 'yarn'"}},
      {"rope_llama3",
       [](Module& m) {
         m.program.ops[m.program.find_op("L0.q_rope")].attrs["rope_type"] = std::string("llama3");
       },
       {"'L0.q_rope' (rope)", "missing attribute 'factor'"}},
      {"kv_append",
       [](Module& m) { m.program.ops[m.program.find_op("L0.kv_append")].outputs.pop_back(); },
       {"'L0.kv_append' (kv_append)", "expects 2 inputs and 2 outputs, has 2 and 1"}},
      {"attention",
       [](Module& m) {
         m.program.ops[m.program.find_op("L0.attention")].attrs["num_q_heads"] = int64_t{3};
       },
       {"'L0.attention' (attention)", "q width (num_q_heads x head_dim) is 8, expected 12"}},
      {"attention_gqa",
       [](Module& m) {
         m.program.ops[m.program.find_op("L0.attention")].attrs["num_kv_heads"] = int64_t{3};
       },
       {"num_q_heads 2 is not a multiple of num_kv_heads 3"}},
      {"silu_mul",
       [](Module& m) {
         auto& op = m.program.ops[m.program.find_op("L0.silu_mul")];
         op.inputs[1] = m.program.find_tensor("down.0");
       },
       {"'L0.silu_mul' (silu_mul)", "b 'down.0' [1, 8] and a 'gate.0' [1, 16] must have the same shape"}},
      {"residual_add",
       [](Module& m) { m.program.tensors[m.program.find_tensor("h_mid.0")].dtype = DType::kI32; },
       {"'L0.attn_residual' (residual_add)", "y 'h_mid.0' must be a floating-point tensor"}},
      {"lm_head",
       [](Module& m) { m.program.tensors[m.program.find_tensor("logits")].dtype = DType::kBF16; },
       {"'lm_head' (lm_head)", "logits 'logits' must be f32, is bf16"}},
      {"argmax",
       [](Module& m) {
         m.program.ops[m.program.find_op("argmax")].inputs[0] = m.program.find_tensor("model.embed_tokens.weight");
       },
       {"'argmax' (argmax)", "tokens length (batch) is 1, expected 32"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Module m = tiny_module();
    c.mutate(m);
    expect_only(m, "structure.op-signature", c.pieces);
  }
}

TEST(Verifier, TaskKind) {
  Module m = tiny_module();
  m.graph.tasks[2].kind = TaskKind::kAttentionMerge;
  expect_only(m, "structure.task-kind",
              {"task 2 of kind attention_merge belongs to operator 'L0.q_proj' of kind linear"});
}

TEST(Verifier, BadId) {
  Module m = tiny_module();
  m.graph.tasks[1].op = 22;
  expect_only(m, "structure.bad-id", {"task 1 refers to operator 22, but there are 22 operators"});
  Module e = tiny_module();
  e.graph.events[2].producers = {1, 99};
  e.graph.events[2].target = 2;
  expect_only(e, "structure.bad-id", {"event 2 producer refers to task 99"});
  Module w = tiny_module();
  w.graph.schedule.workers[0][0] = -1;
  expect_only(w, "structure.bad-id", {"worker 0 lists task -1"});
}

TEST(Verifier, EventTarget) {
  Module m = tiny_module();
  m.graph.events[4].target = 2;
  expect_only(m, "structure.event-target", {"event 4 has target 2 but 1 producers"});
}

TEST(Verifier, EventDistance) {
  Module m = tiny_module();
  m.graph.events.back().step_distance = -1;
  expect_only(m, "structure.event-distance", {"step_distance -1 (must be 0 or 1)"});
}

TEST(Verifier, EventList) {
  Module m = tiny_module();
  m.graph.events[11].producers = {11, 0};  // was (0, 11)
  expect_only(m, "structure.event-list", {"event 11 producers are not sorted and unique"});
  Module e = tiny_module();
  e.graph.events[0].consumers.clear();
  expect_only(e, "structure.event-list", {"event 0 has no consumers"});
}

TEST(Verifier, AttrKey) {
  Module m = tiny_module();
  m.program.ops[5].attrs["bad key"] = int64_t{1};
  expect_only(m, "structure.attr-key", {"operator 5 'L0.q_norm' has attribute key 'bad key'"});
}

TEST(Verifier, GraphCycle) {
  Module m = tiny_module();
  m.graph.events.push_back(Event{{5}, {2}, 1, 0});  // q_norm -> q_proj -> q_norm
  expect_only(m, "graph.cycle",
              {"task 2 (L0.q_proj:linear) -> task 5 (L0.q_norm:qk_norm) -> task 2"});
}

TEST(Verifier, UnorderedReadSameStep) {
  Module m = tiny_module();
  // attention (10) waits on q_rope (7) and kv_append (9): drop q_rope, and let q_rope
  // trigger o_proj (11) instead, so that it still precedes the rest of the step (and
  // through argmax -> embed, the next step's writes).
  ASSERT_EQ(m.graph.events[9].producers, (std::vector<TaskId>{7, 9}));
  m.graph.events[9].producers = {9};
  m.graph.events[9].target = 1;
  m.graph.events.push_back(Event{{7}, {11}, 1, 0});
  expect_only(m, "graph.unordered-read",
              {"task 10 (L0.attention:attention) reads qr.0[0:1, 0:8]",
               "task 7 (L0.q_rope:rope) writes earlier in the step",
               "no chain of distance-0 events orders task 7 before task 10"});
}

TEST(Verifier, UnorderedReadFromPreviousStep) {
  Module m = tiny_module();
  m.graph.events.pop_back();  // argmax -> embed, distance 1
  // That event also ordered every write of a step after the previous step's reads.
  const std::vector<Diagnostic> d = verify_module(m);
  ASSERT_FALSE(d.empty());
  EXPECT_EQ(d[0].rule, "graph.unordered-read");
  EXPECT_NE(d[0].message.find("task 0 (embed:embedding) reads tokens[0:1], which task 22 "
                              "(argmax:argmax_reduce) wrote in the previous step"),
            std::string::npos)
      << d[0].message;
  for (const Diagnostic& x : d)
    EXPECT_TRUE(x.rule == "graph.unordered-read" || x.rule == "graph.unordered-write") << x.rule;
}

TEST(Verifier, ChainsOfEventsOrderAccesses) {
  // attn_residual reads h.0 (written by embed): drop the direct edge, keep the chain
  // embed -> input_norm -> ... -> o_proj -> attn_residual.
  Module m = tiny_module();
  ASSERT_EQ(m.graph.events[11].producers, (std::vector<TaskId>{0, 11}));
  m.graph.events[11].producers = {11};
  m.graph.events[11].target = 1;
  EXPECT_TRUE(verify_module(m).empty());

  // Previous step: ring task 0 reads what task 2 wrote; 2 -(1)-> 3 -(0)-> 0 orders it.
  Module ring = ring_module();
  ring.graph.events.push_back(Event{{2}, {3}, 1, 1});
  ring.graph.events.push_back(Event{{3}, {0}, 1, 0});
  EXPECT_TRUE(verify_module(ring).empty());
  // Two steps of distance are not enough.
  ring.graph.events[3].step_distance = 1;
  const std::vector<Diagnostic> d = verify_module(ring);
  ASSERT_FALSE(d.empty());
  EXPECT_EQ(d[0].rule, "graph.unordered-read");
  EXPECT_NE(d[0].message.find("task 0 (op0:residual_add) reads a[0:1, 0:4], which task 2 "
                              "(op2:residual_add) wrote in the previous step"),
            std::string::npos)
      << d[0].message;
}

TEST(Verifier, UnorderedWriteAfterRead) {
  // Ring task 3 now reads b (written by task 0, ordered by an event): the next step's
  // task 0 overwrites b while nothing orders it after this step's task 3.
  Module m = ring_module();
  m.program.ops[3].inputs = {1, 3};
  m.graph.tasks[3].reads = {full_region(1, {1, 4}), full_region(3, {1, 4})};
  m.program.rebuild_use_lists();
  m.graph.events.push_back(Event{{2}, {0}, 1, 1});
  m.graph.events.push_back(Event{{0}, {3}, 1, 0});
  expect_only(m, "graph.unordered-write",
              {"task 0 (op0:residual_add) writes b[0:1, 0:4], which task 3 (op3:residual_add) "
               "read in the previous step (b[0:1, 0:4])",
               "no chain of events of total distance <= 1 orders task 3 before task 0"});
  m.graph.events.push_back(Event{{3}, {0}, 1, 1});
  EXPECT_TRUE(verify_module(m).empty());
}

TEST(Verifier, UnorderedWriteAfterWrite) {
  // Ring task 3 now writes b, which task 0 writes earlier in the step (and reads e,
  // now a weight).
  Module m = ring_module();
  m.program.tensors[4].role = TensorRole::kWeight;
  m.program.ops[3].inputs = {3, 4};
  m.program.ops[3].outputs = {1};
  m.graph.tasks[3].reads = {full_region(3, {1, 4}), full_region(4, {1, 4})};
  m.graph.tasks[3].writes = {full_region(1, {1, 4})};
  m.program.rebuild_use_lists();
  m.graph.events.push_back(Event{{2, 3}, {0}, 2, 1});  // both writers of b and a -> 0
  m.graph.events.push_back(Event{{3}, {1}, 1, 1});     // task 1 reads b from task 3
  const std::vector<Diagnostic> d = verify_module(m);
  ASSERT_FALSE(d.empty());
  for (const Diagnostic& x : d) EXPECT_EQ(x.rule, "graph.unordered-write") << x.message;
  bool waw = false;
  for (const Diagnostic& x : d)
    waw = waw || x.message.find("task 3 (op3:residual_add) writes b[0:1, 0:4], which task 0 "
                                "(op0:residual_add) writes earlier in the step") != std::string::npos;
  EXPECT_TRUE(waw);
}

TEST(Verifier, GraphTooLargeToCheckAcrossStepsIsRefused) {
  Module m = ring_module();  // 140000 distance-1 events: 2 x 140004 x 2188 words > 4 GiB
  m.graph.events.assign(140000, Event{{2}, {0}, 1, 1});
  expect_only(m, "graph.too-large", {"checking the order across steps of 4 tasks and 140000 events needs "
                                     "4901260032 bytes, above the limit of 4294967296 (4 GiB)"});
}

TEST(Verifier, UnscheduledTask) {
  Module m = tiny_module();
  m.graph.schedule.workers[0].pop_back();  // task 22
  expect_only(m, "graph.unscheduled-task", {"task 22 (argmax:argmax_reduce) is on no worker"});
}

TEST(Verifier, TaskScheduledTwice) {
  Module m = tiny_module();
  m.graph.schedule.workers[0].push_back(3);
  expect_only(m, "graph.task-scheduled-twice",
              {"task 3 (L0.k_proj:linear) is scheduled 2 times (workers 0, 1)"});
}

TEST(Verifier, BadWorker) {
  Module m = tiny_module();
  m.machine.sm_count = 1;
  expect_only(m, "graph.bad-worker", {"2 workers", "machine 'toy GPU' has 1 SMs"});
}

TEST(Verifier, ScheduleDeadlock) {
  // q_norm (5) waits on q_proj (2); k_norm (6) waits on k_proj (3). Worker 0 queues 5
  // before 3, worker 1 queues 6 before 2: each waits on a task queued after the other's.
  Module m = tiny_module();
  std::vector<TaskId> w0 = {0, 1, 5, 3, 4}, w1 = {6, 2};
  for (TaskId t = 7; t < 23; ++t) w0.push_back(t);
  m.graph.schedule.workers = {w0, w1};
  EXPECT_TRUE(verify_structure(m).empty());
  EXPECT_TRUE(verify_graph(m).empty());
  expect_only(m, "schedule.deadlock",
              {"task 5 (L0.q_norm:qk_norm) on worker 0", "task 3 (L0.k_proj:linear) on worker 0",
               "task 6 (L0.k_norm:qk_norm) on worker 1", "task 2 (L0.q_proj:linear) on worker 1"});
  // Swapping worker 1's order removes the cycle.
  m.graph.schedule.workers[1] = {2, 6};
  EXPECT_TRUE(verify_module(m).empty());
}

TEST(Verifier, LayersRunInOrderAndThrowNamesTheRule) {
  Module m = tiny_module();
  m.graph.events[4].target = 2;                     // structure
  m.graph.schedule.workers[1].pop_back();           // graph
  const std::vector<Diagnostic> d = verify_module(m);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].rule, "structure.event-target");
  EXPECT_EQ(verify_graph(m).at(0).rule, "graph.unscheduled-task");
  try {
    verify_or_throw(m);
    ADD_FAILURE() << "no throw";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "verifier: structure.event-target: event 4 has target 2 but 1 producers");
  }
}

TEST(Verifier, DiagnosticsAreCappedPerRule) {
  Module m = tiny_module();
  for (Event& e : m.graph.events) e.target += 5;
  const std::vector<Diagnostic> d = verify_module(m);
  ASSERT_EQ(d.size(), static_cast<size_t>(DiagnosticSink::kMaxPerRule) + 1);
  EXPECT_EQ(d.back().message,
            std::to_string(m.graph.events.size() - DiagnosticSink::kMaxPerRule) +
                " more diagnostics of this rule");
}

}  // namespace
}  // namespace mpk
