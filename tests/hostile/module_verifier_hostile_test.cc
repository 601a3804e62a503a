// Hostile module contents given to `mpk run --graph` and `mpk-opt`: each test takes the tiny
// preset's scheduled module (compiled in this process), breaks one rule of docs/ir.md in
// memory, saves it without verifying, and checks that the CLI refuses it naming the
// problem, where the old verifier let it through to overflow a heap buffer or to print
// other tokens without complaint.
#include <algorithm>
#include <functional>
#include <utility>

#include "ir/import/import.h"
#include "ir/serialize.h"
#include "passes/pass_manager.h"
#include "tests/hostile/hostile_fixture.h"

namespace mpk::hostile {
namespace {

Module scheduled_tiny(const std::string& max_seq = "") {
  ImportOptions o;
  if (!max_seq.empty()) o.max_seq_len = std::stoll(max_seq);
  Module m = import_model("tiny", o);
  PassManager(parse_pipeline(kDefaultPipeline)).run(m);
  return m;
}

TensorId tensor(const Module& m, const std::string& name) {
  const TensorId t = m.program.find_tensor(name);
  EXPECT_GE(t, 0) << name;
  return t;
}

// Removes the tasks `drop` selects and derives events and a schedule for the rest anew, as
// an editor deleting tasks would (unverified: the old verifier accepted the result).
void erase_tasks(Module& m, const std::function<bool(const Task&)>& drop) {
  std::vector<Task> kept;
  for (const Task& t : m.graph.tasks)
    if (!drop(t)) kept.push_back(t);
  m.graph = TaskGraph{};
  m.graph.tasks = std::move(kept);
  PassManagerConfig c;
  c.verify_each = false;
  PassManager(parse_pipeline("infer-deps,assign-sm"), c).run(m);
}

class ModuleVerifierHostileTest : public HostileTest {
 protected:
  // Saves m (text) unverified and runs it for three steps on the CPU backend.
  CliResult run_graph(const Module& m) {
    save_module(m, path("bad.mpk"), Format::kText);
    return run("mpk", "run --backend cpu --steps 3 --graph '" + path("bad.mpk") + "'", 60);
  }
  // Saves m (text) unverified and reschedules it with mpk-opt.
  CliResult reschedule(const Module& m) {
    save_module(m, path("bad.mpk"), Format::kText);
    return run("mpk-opt", "'" + path("bad.mpk") + "' --pass-pipeline=assign-sm -o '" + path("out.mpk") + "'");
  }
};

TEST_F(ModuleVerifierHostileTest, KvCacheWhoseElementCountOverflowsIsRefused) {
  Module m = scheduled_tiny();
  const int64_t huge = int64_t{1} << 57;  // [1, 2^57, 2, 64]: 2^64 elements
  for (const char* name : {"k_cache.0", "v_cache.0"}) {
    const TensorId t = tensor(m, name);
    m.program.tensors[t].shape[1] = huge;
    for (Task& task : m.graph.tasks)
      for (auto* list : {&task.reads, &task.writes})
        for (Region& r : *list)
          if (r.tensor == t) r.dims[1].hi = huge;  // its regions widened to match
  }
  expect_refused(run_graph(m), "tensor 10 'k_cache.0' [1, 144115188075855872, 2, 64]: tensor 'k_cache.0' "
                               "element count overflows int64");
}

TEST_F(ModuleVerifierHostileTest, AttentionScratchWhoseElementCountOverflowsIsRefused) {
  Module m = scheduled_tiny("1024");  // attention in 4 splits, partials in attn_part.0
  m.program.tensors[tensor(m, "attn_part.0")].shape = {1, 4, int64_t{1} << 62, 66};
  expect_refused(run_graph(m), "'attn_part.0' [1, 4, 4611686018427387904, 66]: tensor 'attn_part.0' element "
                               "count overflows int64");
}

TEST_F(ModuleVerifierHostileTest, ArgmaxScratchWhoseBytesOverflowIsRefused) {
  Module m = scheduled_tiny();
  m.program.tensors[tensor(m, "argmax_val")].shape = {1, int64_t{1} << 62};
  m.program.tensors[tensor(m, "argmax_idx")].shape = {1, int64_t{1} << 62};
  expect_refused(run_graph(m), "'argmax_val' [1, 4611686018427387904]: tensor 'argmax_val' bytes overflows int64");
}

TEST_F(ModuleVerifierHostileTest, TensorAboveOneTebibyteIsRefused) {
  Module m = scheduled_tiny();
  m.program.tensors[tensor(m, "argmax_val")].shape = {1, int64_t{1} << 39};  // 2 TiB of f32
  m.program.tensors[tensor(m, "argmax_idx")].shape = {1, int64_t{1} << 39};
  expect_refused(run_graph(m), "'argmax_val' [1, 549755813888] holds 2199023255552 bytes, above the limit of "
                               "1099511627776 (1 TiB)");
}

TEST_F(ModuleVerifierHostileTest, LmHeadTasksDeletedAreRefused) {
  Module m = scheduled_tiny();
  erase_tasks(m, [](const Task& t) { return t.kind == TaskKind::kLmHead; });
  expect_refused(run_graph(m), "structure.coverage: operator 'lm_head': its tasks write 0 of the 512 elements of "
                               "'logits'");
}

TEST_F(ModuleVerifierHostileTest, DeletedTaskLeavesItsOutputUncovered) {
  Module m = scheduled_tiny();
  bool first = true;
  erase_tasks(m, [&](const Task& t) { return t.kind == TaskKind::kLmHead && std::exchange(first, false); });
  expect_refused(run_graph(m), "structure.coverage: operator 'lm_head': its tasks write 504 of the 512 elements of "
                               "'logits'");
}

// The first lm_head task, by id.
Task& first_lm_head(Module& m, size_t* id) {
  for (size_t i = 0; i < m.graph.tasks.size(); ++i)
    if (m.graph.tasks[i].kind == TaskKind::kLmHead) return m.graph.tasks[*id = i];
  throw Error("no lm_head task");
}

TEST_F(ModuleVerifierHostileTest, ShrunkWriteRegionIsRefused) {
  Module m = scheduled_tiny();
  size_t id = 0;
  first_lm_head(m, &id).writes[0].dims[1].hi -= 4;  // logits[0:1, 0:8] -> [0:1, 0:4]; its W rows still 0:8
  expect_refused(run_graph(m), "structure.task-regions: task " + std::to_string(id) + " (lm_head:lm_head) has reads(");
}

TEST_F(ModuleVerifierHostileTest, EmptiedWriteRegionIsRefused) {
  Module m = scheduled_tiny();
  size_t id = 0;
  Region& w = first_lm_head(m, &id).writes[0];
  w.dims[1].hi = w.dims[1].lo;
  expect_refused(run_graph(m), "task " + std::to_string(id) + " (lm_head:lm_head) has an empty region logits[0:1, 0:0]");
}

TEST_F(ModuleVerifierHostileTest, TokensDeclaredWeightAreRefused) {
  Module m = scheduled_tiny();
  m.program.tensors[tensor(m, "tokens")].role = TensorRole::kWeight;
  expect_refused(run_graph(m), "operator 'lm_head' writes tensor 'tokens' (weight): weights are read-only");
}

TEST_F(ModuleVerifierHostileTest, WeightDeclaredActivationIsRefused) {
  Module m = scheduled_tiny();
  m.program.tensors[tensor(m, "model.norm.weight")].role = TensorRole::kActivation;
  expect_refused(run_graph(m), "reads tensor 'model.norm.weight' (activation), which no operator writes");
}

TEST_F(ModuleVerifierHostileTest, WeightDeclaredInputIsRefused) {
  Module m = scheduled_tiny();
  m.program.tensors[tensor(m, "model.norm.weight")].role = TensorRole::kInput;
  expect_refused(run_graph(m), "operator 'lm_head' reads tensor 'model.norm.weight' (input): the runtime supplies "
                               "only the tokens an embedding reads");
}

TEST_F(ModuleVerifierHostileTest, UnusedScratchTensorIsRefused) {
  Module m = scheduled_tiny();
  m.program.add_tensor(Tensor{"junk", DType::kF32, {805306368}, TensorRole::kScratch});  // 3 GiB
  expect_refused(reschedule(m), "tensor 44 'junk' (scratch) is used by no operator and no task");
}

TEST_F(ModuleVerifierHostileTest, NegativeTaskBytesAreRefused) {
  Module m = scheduled_tiny();
  m.graph.tasks[7].bytes = -5;
  m.graph.tasks[8].flops = int64_t{1} << 62;
  expect_refused(reschedule(m), "task 7 (L0.q_proj:linear) bytes must be in 0..17592186044416, got -5");
}

TEST_F(ModuleVerifierHostileTest, BatchAttrThatDisagreesWithTheTensorsIsRefused) {
  Module m = scheduled_tiny();
  m.attrs["batch"] = int64_t{2};
  expect_refused(reschedule(m), "module attr batch is 2, but tensor 'tokens' (dimension 0) says 1");
}

TEST_F(ModuleVerifierHostileTest, BinaryModuleWithInvalidUtf8GivesOneErrorLine) {
  std::string bytes = module_to_binary(import_model("tiny", ImportOptions{}));
  bytes.replace(bytes.find("tokens"), 3, "\xff\xfe\xfd");  // proto3 strings must be UTF-8
  write("bad.mpk", bytes);
  const CliResult r = run("mpk-opt", "'" + path("bad.mpk") + "' -o '" + path("out.mpk") + "'");
  expect_refused(r, "bad.mpk: not a valid mpk module (malformed protobuf");
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

}  // namespace
}  // namespace mpk::hostile
