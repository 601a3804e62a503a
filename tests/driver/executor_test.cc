// Tests of driver/executor.h on the tiny preset: the cpu executor decodes (tokens and
// executions of every task at every step, its run record), the sim executor gives what
// the simulator gives, the gpu executor (label gpu; skipped, saying so, without a GPU or
// without CUDA in the build) gives the cpu's tokens; unknown and unfit requests fail with
// a message.
#include "driver/executor.h"

#include <gtest/gtest.h>

#include "driver_test_util.h"
#include "ir/error.h"
#include "ir/import/import.h"
#include "runtime/cpu/executor.h"
#include "runtime/cpu/run_common.h"
#include "runtime/weights/weights.h"
#include "ir/cost_params.h"
#include "traces/shipped_costs.h"
#include "traces/simulator.h"

namespace mpk {
namespace {

using testing::DriverTest;

TEST_F(DriverTest, CpuExecutorDecodesAndRecords) {
  const Compiled c = testing::tiny();
  ExecutorOptions o;
  o.threads = 2;
  const std::unique_ptr<Executor> cpu = make_executor("cpu", c.module, o);
  EXPECT_STREQ(cpu->kind(), "cpu");
  EXPECT_EQ(cpu->weights_note(), "random(seed=0)");
  const ExecResult r = cpu->run({3, {1, 2}, true});
  EXPECT_EQ(r.steps, 3);
  EXPECT_EQ(r.batch, 1);
  ASSERT_EQ(r.tokens.size(), 3u);
  ASSERT_EQ(r.top_logits.size(), 3u);
  EXPECT_EQ(r.logits.size(), static_cast<size_t>(find_run_tensors(c.module.program).vocab));
  EXPECT_EQ(r.executions.size(), 3 * c.module.graph.tasks.size());
  EXPECT_EQ(cpu->describe(), "schedule order, " + std::to_string(r.threads) + " threads");
  const RunInfo info = cpu->run_info(r);
  EXPECT_EQ(info.kind, "cpu");
  EXPECT_EQ(info.options, "order=schedule threads=" + std::to_string(r.threads) + " weights=random(seed=0)");
  EXPECT_EQ(info.steps, 3);

  // The same module in a seeded random order gives the same tokens; it records nothing.
  o.order = "random";
  o.seed = 7;
  const std::unique_ptr<Executor> random = make_executor("cpu", c.module, o);
  EXPECT_EQ(random->run({3, {1, 2}, false}).tokens, r.tokens);
  EXPECT_EQ(random->describe(), "random order (seed 7), 1 thread");
  EXPECT_THROW(random->run({3, {1, 2}, true}), Error);
}

// Tensor parallel through the driver: `tp` shards the module, and the cpu executor runs
// its ranks with slices of the whole model's weights, cut at load from a checkpoint or
// from the random weights: the tokens of run_cpu_tp with those slices.
TEST_F(DriverTest, CpuExecutorRunsTheRanksOfAShardedCheckpoint) {
  const Module whole = import_model("tiny", ImportOptions{});
  const Weights w = random_weights(whole, 3);
  write_checkpoint(whole, w, path("ckpt"));
  for (const bool checkpoint : {true, false}) {
    SCOPED_TRACE(checkpoint ? "checkpoint" : "random weights");
    CompileRequest r;
    r.model = checkpoint ? path("ckpt") : "tiny";
    r.tp = 2;
    const Compiled c = compile(r);
    EXPECT_EQ(c.pipeline.rfind("shard-tp{ranks=2},", 0), 0u) << c.pipeline;
    ExecutorOptions o;
    o.threads = 2;
    o.weights_seed = 3;
    const std::unique_ptr<Executor> cpu = make_executor("cpu", c.module, o);
    EXPECT_NE(cpu->weights_note().find("sharded over 2 tensor-parallel ranks"), std::string::npos)
        << cpu->weights_note();
    EXPECT_NE(cpu->describe().find("2 ranks of"), std::string::npos) << cpu->describe();
    const ExecResult got = cpu->run({8, {1, 2}, false});
    CpuRunOptions ro;
    ro.steps = 8;
    ro.prompt = {1, 2};
    const CpuExecResult want = run_cpu_tp(c.module, {shard_weights(c.module, w, 0), shard_weights(c.module, w, 1)}, ro);
    EXPECT_EQ(got.tokens, want.tokens);
    EXPECT_EQ(got.logits, want.logits);
  }
}

TEST_F(DriverTest, SimExecutorIsTheSimulator) {
  const Compiled c = testing::tiny();
  const std::unique_ptr<Executor> sim = make_executor("sim", c.module, ExecutorOptions{});
  const ExecResult r = sim->run({4, {1}, true});
  // The default cost model: the machine's shipped calibration, else the machine model's.
  std::string used;
  const std::vector<Execution> direct = simulate(c.module, simulation_costs(c.module.machine, "", &used), 4);
  ASSERT_EQ(r.executions.size(), direct.size());
  for (size_t i = 0; i < direct.size(); ++i) {
    EXPECT_EQ(r.executions[i].task, direct[i].task);
    EXPECT_EQ(r.executions[i].start_ns, direct[i].start_ns);
    EXPECT_EQ(r.executions[i].end_ns, direct[i].end_ns);
  }
  EXPECT_TRUE(r.tokens.empty());
  EXPECT_EQ(sim->describe(), c.module.machine.name + ", costs: " + used);
  EXPECT_EQ(sim->run_info(r).options,
            used == "machine model" ? "costs=machine-model" : "costs=shipped:" + used.substr(20, used.find(' ', 20) - 20));
  EXPECT_EQ(sim->weights_note(), "");
}

// With a prefill chunk, the cpu executor decodes from step P - 1 the tokens of one step per
// prompt token, and the sim simulates the chunk's steps as a run of their own before the
// decode's steps P - 1.. (numbered so).
TEST_F(DriverTest, ExecutorsPrefillWithAChunk) {
  const Compiled c = testing::tiny();
  CompileRequest chunk_request;
  chunk_request.model = "tiny";
  chunk_request.chunk = 4;
  const Compiled chunk = compile(chunk_request);
  ExecRequest req{12, {3, 1, 4, 1, 5, 9, 2, 6, 5, 3}, true};
  const std::unique_ptr<Executor> cpu = make_executor("cpu", c.module, ExecutorOptions{});
  const ExecResult plain = cpu->run(req);
  req.prefill = &chunk.module;
  const ExecResult prefilled = cpu->run(req);
  EXPECT_EQ(prefilled.first_step, 9);
  ASSERT_TRUE(prefilled.prefill);
  EXPECT_EQ(prefilled.prefill->steps, 3);
  EXPECT_EQ(prefilled.prefill->executions.size(), 3 * chunk.module.graph.tasks.size());
  for (int64_t s = 9; s < 12; ++s) EXPECT_EQ(prefilled.tokens[s], plain.tokens[s]) << s;
  EXPECT_EQ(prefilled.logits, plain.logits);
  EXPECT_EQ(prefilled.executions.size(), 3 * c.module.graph.tasks.size());
  for (const Execution& x : prefilled.executions) EXPECT_GE(x.step, 9);
  const std::unique_ptr<Executor> sim = make_executor("sim", c.module, ExecutorOptions{});
  const ExecResult simulated = sim->run(req);
  ASSERT_TRUE(simulated.prefill);
  EXPECT_EQ(simulated.prefill->steps, 3);
  EXPECT_EQ(simulated.first_step, 9);
  EXPECT_EQ(simulated.executions.size(), 3 * c.module.graph.tasks.size());
  for (const Execution& x : simulated.executions) EXPECT_GE(x.step, 9);
  EXPECT_EQ(sim->run_info(simulated).steps, 12);
  // The chunk on its own, as the studio simulates a stored prefill run: its steps take 4
  // positions each, 32 of them fill tiny's 128.
  const std::unique_ptr<Executor> chunk_sim = make_executor("sim", chunk.module, ExecutorOptions{});
  EXPECT_EQ(chunk_sim->run({32, {1}, true}).executions.size(), 32 * chunk.module.graph.tasks.size());
  EXPECT_NE(testing::error_of([&] { chunk_sim->run({33, {1}, true}); }).find("x 4 (a prefill chunk's rows)"),
            std::string::npos);
}

TEST_F(DriverTest, UnknownAndUnfitRequestsFail) {
  const Compiled c = testing::tiny();
  try {
    make_executor("tpu", c.module, ExecutorOptions{});
    ADD_FAILURE() << "made a tpu executor";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown backend 'tpu' (known: cpu"), std::string::npos) << e.what();
  }
  ExecutorOptions bad;
  bad.costs = path("missing.json");
  EXPECT_THROW(make_executor("sim", c.module, bad), Error);
  const int64_t too_many = attr_int(c.module.attrs, "max_seq_len") + 1;
  for (const char* kind : {"cpu", "sim"})
    EXPECT_THROW(make_executor(kind, c.module, ExecutorOptions{})->run({too_many, {1}, false}), Error)
        << kind;
}

// The gpu executor on the tiny preset; skipped without CUDA or a GPU.
class DriverGpu : public DriverTest {
 protected:
  void SetUp() override {
    DriverTest::SetUp();
    const ExecutorKind* gpu = find_executor("gpu");
    if (!gpu) GTEST_SKIP() << "built without CUDA: there is no gpu executor";
    if (!gpu->available()) GTEST_SKIP() << "no CUDA GPU on this machine";
    g_ = make_executor("gpu", c_.module, ExecutorOptions{});
  }
  const Compiled c_ = testing::tiny();
  std::unique_ptr<Executor> g_;
};

TEST_F(DriverGpu, ExecutorGivesTheCpuTokens) {
  const Compiled& c = c_;
  Executor* g = g_.get();
  const ExecResult r = g->run({4, {1, 2}, true});
  const ExecResult cpu = make_executor("cpu", c.module, ExecutorOptions{})->run({4, {1, 2}, false});
  EXPECT_EQ(r.tokens, cpu.tokens);
  EXPECT_EQ(r.logits, cpu.logits);
  EXPECT_EQ(r.executions.size() + r.dropped, 4 * c.module.graph.tasks.size());
  EXPECT_EQ(g->run_info(r).kind, "gpu");
}

TEST_F(DriverGpu, ExecutorStreamsTheTokensAndStopsInTheKernel) {
  Executor* g = g_.get();
  const ExecResult all = g->run({24, {1, 2}, false});
  std::vector<std::vector<int32_t>> seen;
  ExecRequest req{24, {1, 2}, false};
  req.on_step = [&](int64_t, const std::vector<int32_t>& t) { seen.push_back(t); };
  req.stop = {{all.tokens[5][0]}, 1};
  const ExecResult r = g->run(req);
  // The first step from 1 on that produced the stop token.
  int64_t k = 1;
  while (all.tokens[k] != all.tokens[5]) ++k;
  EXPECT_TRUE(r.streamed);
  EXPECT_EQ(r.stopped_at, k);
  EXPECT_EQ(r.steps, k + 1);
  EXPECT_EQ(seen, std::vector<std::vector<int32_t>>(all.tokens.begin(), all.tokens.begin() + k + 1));
  EXPECT_EQ(r.tokens, seen);
}

}  // namespace
}  // namespace mpk
