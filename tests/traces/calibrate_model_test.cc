// The whole cost model is recovered from runs the simulator made with known parameters:
// event latency with its growth per triggered event and per consumer, dispatch and step
// gaps, the weight stream's ring, positional KV-cache reads; from one run or several runs
// of different schedules together.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "tests/traces/test_graphs.h"
#include "traces/calibrate.h"
#include "traces/simulator.h"

namespace mpk {
namespace {

using testing::GraphBuilder;

// Layers of norm -> linears -> attention: the norm releases one event per linear and
// one for a group of them (trigger index and consumer count vary), the attention tasks
// read a KV cache of 8 positions, on 8 workers; with a cross-step edge. `shift` moves
// the linear tasks to other workers (another schedule of the same graph).
Module model_graph(int shift = 0) {
  GraphBuilder g(8);
  const OpId lin = g.op("linear"), norm = g.op("norm", OpKind::kRmsNorm);
  const OpId attn = g.op("attention", OpKind::kAttention);
  Module shape = g.schedule({});
  Tensor cache;
  cache.name = "k_cache";
  cache.dtype = DType::kBF16;
  cache.shape = {1, 8, 1, 256};
  cache.role = TensorRole::kKvCache;
  std::vector<std::vector<TaskId>> lists(8);
  auto place = [&](TaskId t, int w) { lists[static_cast<size_t>(w % 8)].push_back(t); };
  std::vector<TaskId> prev;
  TaskId first = -1, last = -1;
  for (int layer = 0; layer < 10; ++layer) {
    const TaskId n = g.task(norm, 2000 + 700 * (layer % 4), TaskKind::kRmsNorm);
    place(n, layer);
    if (first < 0) first = n;
    if (!prev.empty()) g.event(prev, {n});
    const int width = 4 + layer % 5;
    std::vector<TaskId> cur;
    for (int i = 0; i < width; ++i) {
      // Some small enough for the ring to hold them whole (their fixed time shows).
      const TaskId t = g.task(lin, (i + layer) % 4 == 3 ? 1500 : 6000 + 4000 * ((i + layer) % 3));
      place(t, layer + i + 1 + shift);
      cur.push_back(t);
    }
    g.event({n}, {cur.begin(), cur.begin() + width / 2});  // one event, several consumers
    for (int i = width / 2; i < width; ++i) g.event({n}, {cur[static_cast<size_t>(i)]});
    std::vector<TaskId> heads;
    for (int h = 0; h < 3; ++h) {
      const TaskId a = g.task(attn, 4096 + 1000, TaskKind::kAttention);
      place(a, layer + 2 * h + 3);
      heads.push_back(a);
    }
    g.event(cur, heads);
    prev = heads;
    last = heads.back();
  }
  g.event({last}, {first}, 1);
  Module m = g.schedule(lists);
  m.program.tensors.push_back(cache);
  Region r;
  r.tensor = 0;
  r.dims = {{0, 1}, {0, 8}, {0, 1}, {0, 256}};  // 4096 bytes of bf16
  for (Task& t : m.graph.tasks)
    if (t.kind == TaskKind::kAttention) t.reads.push_back(r);
  return m;
}

CostParams truth() {
  CostParams c;
  c.mem_bandwidth = 4e9;
  c.sm_bandwidth = 1e9;
  c.event_latency_ns = 600;
  c.trigger_ns = 80;
  c.fanout_ns = 50;
  c.dispatch_ns = 40;
  c.step_ns = 900;
  c.prefetch_bytes = 6000;
  c.positional_cache = true;
  c.defaults = {0, 1, 0, 0};
  c.kinds[static_cast<size_t>(TaskKind::kLinear)] = {300.0, 1.3, std::nullopt, 1.0};
  c.kinds[static_cast<size_t>(TaskKind::kRmsNorm)] = {800.0, 0.9, std::nullopt, std::nullopt};
  c.kinds[static_cast<size_t>(TaskKind::kAttention)] = {500.0, 1.1, std::nullopt, std::nullopt};
  return c;
}

// What calibration starts from: the bandwidths and the kinds' stream shares only.
CostParams base_of(const CostParams& known) {
  CostParams base = known;
  base.kinds = {};
  base.kinds[static_cast<size_t>(TaskKind::kLinear)].prefetch = 1.0;
  base.event_latency_ns = base.trigger_ns = base.fanout_ns = 0;
  base.dispatch_ns = base.step_ns = base.prefetch_bytes = 0;
  base.positional_cache = false;
  return base;
}

void expect_recovered(const CostParams& got, const CostParams& want) {
  EXPECT_NEAR(got.event_latency_ns, want.event_latency_ns, 0.02 * want.event_latency_ns);
  EXPECT_NEAR(got.trigger_ns, want.trigger_ns, 0.05 * want.trigger_ns);
  EXPECT_NEAR(got.fanout_ns, want.fanout_ns, 0.05 * want.fanout_ns);
  EXPECT_NEAR(got.dispatch_ns, want.dispatch_ns, 1.0);
  EXPECT_NEAR(got.step_ns, want.step_ns, 0.02 * want.step_ns);
  EXPECT_TRUE(got.positional_cache);
  EXPECT_NEAR(got.prefetch_bytes, want.prefetch_bytes, 0.15 * want.prefetch_bytes);
  for (TaskKind k : {TaskKind::kLinear, TaskKind::kRmsNorm, TaskKind::kAttention}) {
    EXPECT_NEAR(got.cost_of(k).bytes_scale, want.cost_of(k).bytes_scale, 0.04 * want.cost_of(k).bytes_scale)
        << name_of(k);
    EXPECT_NEAR(got.cost_of(k).fixed_ns, want.cost_of(k).fixed_ns, 0.1 * want.cost_of(k).fixed_ns)
        << name_of(k);
  }
}

TEST(CalibrateModel, RecoversEveryTermFromOneRun) {
  const Module m = model_graph();
  const CostParams known = truth();
  const auto execs = simulate(m, known, 6);
  const Calibration cal = calibrate(m, execs, base_of(known));
  expect_recovered(cal.params, known);
  const double want = mean_step_ns(execs, 6);
  const double got = mean_step_ns(simulate(m, cal.params, 6), 6);
  EXPECT_NEAR(got, want, 0.01 * want);
}

TEST(CalibrateModel, PoolsSeveralRunsOfDifferentSchedules) {
  const CostParams known = truth();
  std::vector<CalibrationRun> runs;
  for (int shift : {0, 3, 5}) {
    CalibrationRun r;
    r.module = model_graph(shift);
    r.executions = simulate(r.module, known, 5);
    r.steps = 5;
    runs.push_back(std::move(r));
  }
  const Calibration cal = calibrate(runs, base_of(known));
  expect_recovered(cal.params, known);
  for (const CalibrationRun& r : runs) {
    const double want = mean_step_ns(r.executions, 5);
    EXPECT_NEAR(mean_step_ns(simulate(r.module, cal.params, 5), 5), want, 0.01 * want);
  }
}

// Layers of norm -> a cooperative linear of 8 shares on 6 of 8 workers (two workers
// hold two shares each): the shares draw from one pool, so their durations say nothing
// of their own bytes; calibration splits the operator's bytes by what each SM could
// stream and still recovers the linear's byte factor and the step time. (Its fixed
// time is barely seen: a share's split follows its duration.)
TEST(CalibrateModel, RecoversALinearFromCooperativeShares) {
  GraphBuilder g(8);
  const OpId norm = g.op("norm", OpKind::kRmsNorm);
  std::vector<std::vector<TaskId>> lists(8);
  std::vector<TaskId> prev;
  TaskId first = -1;
  for (int layer = 0; layer < 8; ++layer) {
    const TaskId n = g.task(norm, 1500 + 500 * (layer % 3), TaskKind::kRmsNorm);
    lists[static_cast<size_t>(layer % 8)].push_back(n);
    if (first < 0) first = n;
    if (!prev.empty()) g.event(prev, {n});
    const OpId lin = g.op("linear" + std::to_string(layer));
    std::vector<TaskId> shares;
    for (int s = 0; s < 8; ++s) {
      shares.push_back(g.share(lin, 8000 + 4000 * (layer % 2), s, 8));
      lists[static_cast<size_t>((s % 6 + layer) % 8)].push_back(shares.back());
    }
    g.event({n}, shares);
    prev = shares;
  }
  g.event(prev, {first}, 1);
  const Module m = g.schedule(lists);
  CostParams known = truth();
  known.positional_cache = false;
  known.prefetch_bytes = 0;
  const auto execs = simulate(m, known, 5);
  const Calibration cal = calibrate(m, execs, base_of(known));
  const KindCost got = cal.params.cost_of(TaskKind::kLinear), want = known.cost_of(TaskKind::kLinear);
  EXPECT_NEAR(got.bytes_scale, want.bytes_scale, 0.05 * want.bytes_scale);
  const double step = mean_step_ns(execs, 5);
  EXPECT_NEAR(mean_step_ns(simulate(m, cal.params, 5), 5), step, 0.02 * step);
}

}  // namespace
}  // namespace mpk
