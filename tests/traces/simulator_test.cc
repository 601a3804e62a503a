// The simulator's timings on hand-built graphs whose answer is known.
#include "traces/simulator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>

#include "ir/error.h"
#include "tests/traces/test_graphs.h"

namespace mpk {
namespace {

using testing::GraphBuilder;
using testing::unit_costs;

const Execution& find(const std::vector<Execution>& x, TaskId t, int32_t step) {
  for (const Execution& e : x)
    if (e.task == t && e.step == step) return e;
  throw Error("missing execution");
}

int64_t makespan(const std::vector<Execution>& x) {
  int64_t m = 0;
  for (const Execution& e : x) m = std::max(m, e.end_ns);
  return m;
}

TEST(Simulator, OneTaskIsFixedPlusBytesAtItsOwnBandwidth) {
  GraphBuilder g;
  TaskId a = g.task(g.op("op"), 1000);
  Module m = g.schedule({{a}});
  CostParams c = unit_costs();
  c.defaults.fixed_ns = 250;
  auto x = simulate(m, c, 1);
  ASSERT_EQ(x.size(), 1u);
  EXPECT_EQ(x[0].start_ns, 0);
  EXPECT_EQ(x[0].end_ns, 1250);  // 250 fixed + 1000 bytes at 1 byte/ns
}

TEST(Simulator, BusySmsShareTheMemoryBandwidth) {
  GraphBuilder g;
  OpId op = g.op("op");
  TaskId big = g.task(op, 3000), small = g.task(op, 1000);
  Module m = g.schedule({{big}, {small}});
  CostParams c = unit_costs();
  c.mem_bandwidth = 1e9;  // 1 byte/ns in total: two busy SMs get 0.5 each
  auto x = simulate(m, c, 1);
  // Both stream at 0.5 until `small` is done at 2000 (1000 bytes); `big` has 2000
  // left and then streams alone at 1 byte/ns: done at 4000.
  EXPECT_EQ(find(x, small, 0).end_ns, 2000);
  EXPECT_EQ(find(x, big, 0).end_ns, 4000);
}

TEST(Simulator, ComputeBoundTaskTakesItsFlopsTime) {
  GraphBuilder g;
  TaskId a = g.task(g.op("op"), 100, TaskKind::kLinear, 10000);
  Module m = g.schedule({{a}});
  CostParams c = unit_costs();
  c.defaults.flops_per_ns = 5;  // 2000 ns of arithmetic > 100 ns of streaming
  c.defaults.fixed_ns = 10;
  auto x = simulate(m, c, 1);
  EXPECT_EQ(x[0].end_ns, 2010);
}

TEST(Simulator, EventLatencyAndDispatchDelayTheConsumer) {
  GraphBuilder g;
  OpId op = g.op("op");
  TaskId a = g.task(op, 100), b = g.task(op, 100), c2 = g.task(op, 100);
  g.event({a}, {b});
  Module m = g.schedule({{a, c2}, {b}});
  CostParams c = unit_costs();
  c.event_latency_ns = 700;
  c.dispatch_ns = 30;
  auto x = simulate(m, c, 1);
  const Execution& eb = find(x, b, 0);
  EXPECT_EQ(eb.wait_begin_ns, 0);
  EXPECT_EQ(eb.start_ns, 800);  // a ends at 100, visible 700 ns later
  EXPECT_EQ(eb.end_ns, 900);
  const Execution& ec = find(x, c2, 0);
  EXPECT_EQ(ec.wait_begin_ns, 130);
  EXPECT_EQ(ec.start_ns, 130);
  EXPECT_EQ(ec.end_ns, 230);
}

// Tensor parallel (docs/simulator.md): a release other ranks wait on reaches the waiter
// link_latency_ns later than a local one.
TEST(Simulator, AllRanksEventsPayTheLinkLatency) {
  GraphBuilder g;
  OpId op = g.op("op");
  TaskId a = g.task(op, 100), b = g.task(op, 100);
  g.event({a}, {b});
  Module m = g.schedule({{a}, {b}});
  m.graph.events[0].all_ranks = true;
  m.attrs["tp"] = int64_t{2};
  CostParams c = unit_costs();
  c.event_latency_ns = 700;
  c.link_latency_ns = 2000;
  EXPECT_EQ(find(simulate(m, c, 1), b, 0).start_ns, 2800);  // a ends at 100, then 700 + 2000
  m.graph.events[0].all_ranks = false;
  EXPECT_EQ(find(simulate(m, c, 1), b, 0).start_ns, 800);
}

// An all_reduce task reads its partial columns of the other tp - 1 ranks over the links.
TEST(Simulator, AllReduceReadsThePeersPartialsAtTheLinkBandwidth) {
  GraphBuilder g;
  OpId op = g.op("reduce", OpKind::kAllReduce);
  TaskId t = g.task(op, 0, TaskKind::kAllReduce);
  Module m = g.schedule({{t}});
  const TensorId h = m.program.add_tensor({"h", DType::kBF16, {1, 64}, TensorRole::kActivation});
  const TensorId p = m.program.add_tensor({"p", DType::kBF16, {1, 64}, TensorRole::kActivation});
  m.graph.tasks[t].reads = {{h, {{0, 1}, {0, 64}}}, {p, {{0, 1}, {0, 64}}}};  // 128 bytes of p
  m.attrs["tp"] = int64_t{4};
  CostParams c = unit_costs();
  c.link_bandwidth = 1e9;  // 1 byte/ns
  EXPECT_EQ(find(simulate(m, c, 1), t, 0).end_ns, 3 * 128);
  m.attrs["tp"] = int64_t{1};
  EXPECT_EQ(find(simulate(m, c, 1), t, 0).end_ns, 0);
}

TEST(Simulator, StepsRepeatAndCrossStepEventsGateTheNextStep) {
  // A chain a -> b on two workers; b of step k-1 gates a of step k (distance 1).
  GraphBuilder g;
  OpId op = g.op("op");
  TaskId a = g.task(op, 100), b = g.task(op, 200);
  g.event({a}, {b}, 0);
  g.event({b}, {a}, 1);
  Module m = g.schedule({{a}, {b}});
  CostParams c = unit_costs();
  c.event_latency_ns = 50;
  auto x = simulate(m, c, 4);
  ASSERT_EQ(x.size(), 8u);
  // Each step: a (100) + latency (50) + b (200) + latency (50) = 400 ns.
  for (int32_t k = 0; k < 4; ++k) {
    EXPECT_EQ(find(x, a, k).start_ns, k == 0 ? 0 : 400 * k);
    EXPECT_EQ(find(x, b, k).end_ns, 400 * k + 350);
  }
  EXPECT_EQ(makespan(x), 1550);
}

TEST(Simulator, CountersCountReleasesNotSteps) {
  // Two producers on one event; the consumer of step k needs 2 * (k + 1) releases,
  // whoever made them: p1 (100 ns) runs ahead of p2 (300 ns), as the hardware counter
  // allows when no WAR event holds it back. Releases: 100 200 300 | 300 600 900.
  GraphBuilder g;
  OpId op = g.op("op");
  TaskId p1 = g.task(op, 100), p2 = g.task(op, 300), cns = g.task(op, 10);
  g.event({p1, p2}, {cns});
  Module m = g.schedule({{p1}, {p2}, {cns}});
  auto x = simulate(m, unit_costs(), 3);
  EXPECT_EQ(find(x, cns, 0).start_ns, 200);
  EXPECT_EQ(find(x, cns, 1).start_ns, 300);
  EXPECT_EQ(find(x, cns, 2).start_ns, 900);
}

TEST(Simulator, IndependentWorkersOverlap) {
  GraphBuilder g;
  OpId op = g.op("op");
  std::vector<std::vector<TaskId>> lists(4);
  for (int w = 0; w < 4; ++w)
    for (int i = 0; i < 3; ++i) lists[w].push_back(g.task(op, 100));
  Module m = g.schedule(lists);
  auto x = simulate(m, unit_costs(), 2);
  EXPECT_EQ(x.size(), 24u);
  EXPECT_EQ(makespan(x), 600);  // 3 tasks x 100 ns x 2 steps, all workers in parallel
}

// b (all bytes streamed) waits for a on another worker; its worker's weight stream
// fetches up to `ring` bytes of b while it waits.
struct PrefetchCase {
  Module m;
  TaskId a, b;
};

PrefetchCase prefetch_case() {
  GraphBuilder g;
  OpId op = g.op("op");
  PrefetchCase p;
  p.a = g.task(op, 1000, TaskKind::kRmsNorm);
  p.b = g.task(op, 1000, TaskKind::kLinear);
  g.event({p.a}, {p.b});
  p.m = g.schedule({{p.a}, {p.b}});
  return p;
}

CostParams streaming_costs(double ring) {
  CostParams c = unit_costs();
  c.prefetch_bytes = ring;
  c.kinds[static_cast<size_t>(TaskKind::kLinear)].prefetch = 1.0;
  return c;
}

TEST(Simulator, WeightStreamFetchesAheadWhileATaskWaits) {
  const PrefetchCase p = prefetch_case();
  // Without a ring b streams all 1000 bytes after a ends at 1000.
  EXPECT_EQ(find(simulate(p.m, streaming_costs(0), 1), p.b, 0).end_ns, 2000);
  // With a 400-byte ring, 400 bytes arrive during the wait (0..400).
  const auto x = simulate(p.m, streaming_costs(400), 1);
  EXPECT_EQ(find(x, p.b, 0).start_ns, 1000);
  EXPECT_EQ(find(x, p.b, 0).end_ns, 1600);
  // A ring larger than the task: only the fixed time is left after the start.
  CostParams big = streaming_costs(1e6);
  big.defaults.fixed_ns = 100;
  const auto y = simulate(p.m, big, 1);
  EXPECT_EQ(find(y, p.a, 0).end_ns, 1100);
  EXPECT_EQ(find(y, p.b, 0).end_ns, 1200);
}

TEST(Simulator, StreamingAheadSharesTheBandwidth) {
  const PrefetchCase p = prefetch_case();
  CostParams c = streaming_costs(400);
  c.mem_bandwidth = 1e9;  // 1 byte/ns in total
  const auto x = simulate(p.m, c, 1);
  // a and b's stream share 0.5 each until b's ring is full at 800 (400 bytes); a then
  // streams its last 600 bytes alone: ends at 1400; b's last 600 bytes: 2000.
  EXPECT_EQ(find(x, p.a, 0).end_ns, 1400);
  EXPECT_EQ(find(x, p.b, 0).end_ns, 2000);
}

// A task that streams no weights and waits does not hold the weight stream back: the
// stream fetches ahead for the next task that streams, as the GPU's stream thread walks
// past it.
TEST(Simulator, WeightStreamFetchesAheadPastATaskWithoutWeights) {
  GraphBuilder g;
  OpId op = g.op("op");
  const TaskId a = g.task(op, 1000, TaskKind::kRmsNorm);
  const TaskId n = g.task(op, 0, TaskKind::kRmsNorm);
  const TaskId b = g.task(op, 1000, TaskKind::kLinear);
  g.event({a}, {n});
  Module m = g.schedule({{a}, {n, b}});
  const auto x = simulate(m, streaming_costs(400), 1);
  // n waits for a until 1000; meanwhile 400 bytes of b arrive, so b ends 600 after.
  EXPECT_EQ(find(x, n, 0).end_ns, 1000);
  EXPECT_EQ(find(x, b, 0).end_ns, 1600);
}

// The shares of a cooperative operator draw from one pool: a worker holding two shares
// does not stream twice; every worker streaming a share drains the pool, and a share
// that starts when it is empty takes only its fixed time.
TEST(Simulator, CooperativeSharesDrawFromOnePool) {
  GraphBuilder g;
  const OpId op = g.op("coop");
  const TaskId s0 = g.share(op, 1000, 0, 3), s1 = g.share(op, 1000, 1, 3), s2 = g.share(op, 1000, 2, 3);
  Module m = g.schedule({{s0, s1}, {s2}});
  CostParams c = unit_costs();
  c.defaults.fixed_ns = 10;
  const auto x = simulate(m, c, 2);
  // 3000 bytes at two SMs of 1 byte/ns each: dry 1500 after the fixed 10 ns.
  EXPECT_EQ(find(x, s0, 0).end_ns, 1510);
  EXPECT_EQ(find(x, s2, 0).end_ns, 1510);
  EXPECT_EQ(find(x, s1, 0).start_ns, 1510);
  EXPECT_EQ(find(x, s1, 0).end_ns, 1520);
  // Each step has its own pool: at step 1 worker 1 starts 10 ns earlier, and the two
  // still run dry together.
  EXPECT_EQ(find(x, s0, 1).end_ns, find(x, s2, 1).end_ns);
  EXPECT_EQ(find(x, s0, 1).end_ns, 1510 + 10 + 10 + 1495);
  EXPECT_EQ(find(x, s1, 1).end_ns - find(x, s1, 1).start_ns, 10);
  // As ordinary tasks, worker 0 would stream its two 1000-byte tiles one after another.
  GraphBuilder h;
  const OpId op2 = h.op("tiled");
  const TaskId t0 = h.task(op2, 1000), t1 = h.task(op2, 1000), t2 = h.task(op2, 1000);
  EXPECT_EQ(makespan(simulate(h.schedule({{t0, t1}, {t2}}), c, 1)), 2020);
}

// From step 1 on each share first streams the unit it holds (the GPU's claim loop ends
// by claiming a unit of the next step): with as many units as shares, every share streams
// one unit, the late one on its worker too.
TEST(Simulator, FromStepOneEachShareStreamsTheUnitItHolds) {
  GraphBuilder g;
  const OpId op = g.op("coop");
  const TaskId s0 = g.share(op, 1000, 0, 3), s1 = g.share(op, 1000, 1, 3), s2 = g.share(op, 1000, 2, 3);
  Module m = g.schedule({{s0, s1}, {s2}});
  m.program.ops[static_cast<size_t>(op)].outputs = {
      m.program.add_tensor(Tensor{"y", DType::kBF16, {1, 24}, TensorRole::kActivation})};  // 3 units of 8 rows
  CostParams c = unit_costs();
  c.defaults.fixed_ns = 10;
  const auto x = simulate(m, c, 2);
  EXPECT_EQ(find(x, s1, 0).end_ns, 1520);  // step 0 as with no held units: one pool of 3000 bytes
  EXPECT_EQ(find(x, s2, 1).end_ns, 1510 + 10 + 1000);
  EXPECT_EQ(find(x, s0, 1).end_ns, 1520 + 10 + 1000);
  EXPECT_EQ(find(x, s1, 1).end_ns, 2530 + 10 + 1000);
}

// A share that joins late draws only what the others left, and the pool then drains
// faster (prefetching shares claim from it too, as the GPU's stream thread claims units).
TEST(Simulator, AShareJoiningLateDrawsWhatIsLeft) {
  GraphBuilder g;
  const OpId pre = g.op("pre"), op = g.op("coop");
  const TaskId a = g.task(pre, 500, TaskKind::kRmsNorm);
  const TaskId s0 = g.share(op, 1000, 0, 2), s1 = g.share(op, 1000, 1, 2);
  g.event({a}, {s0});
  Module m = g.schedule({{a, s0}, {s1}});
  const auto x = simulate(m, streaming_costs(1e6), 1);
  // s1 streams from 0; s0's worker is busy with a until 500, then its stream joins:
  // 2000 bytes, 500 by s1 alone, 1500 by both at 1 byte/ns each: dry at 1250.
  EXPECT_EQ(find(x, s1, 0).end_ns, 1250);
  EXPECT_EQ(find(x, s0, 0).end_ns, 1250);
}

TEST(Simulator, DeadlockIsReportedWithWorkerTaskAndEvent) {
  GraphBuilder g;
  OpId op = g.op("op");
  TaskId a = g.task(op, 1), b = g.task(op, 1);
  g.event({b}, {a});
  Module m = g.schedule({{a, b}});  // a waits for b, which runs after a on the same worker
  try {
    simulate(m, unit_costs(), 1);
    FAIL() << "no deadlock reported";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("deadlock"), std::string::npos) << msg;
    EXPECT_NE(msg.find("worker 0"), std::string::npos) << msg;
    EXPECT_NE(msg.find("task 0"), std::string::npos) << msg;
    EXPECT_NE(msg.find("event 0 reached 0 of 1"), std::string::npos) << msg;
  }
}

// The message of simulate(m, c, steps), or "" when it succeeds.
std::string simulate_error(const Module& m, const CostParams& c, int64_t steps) {
  try {
    simulate(m, c, steps);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Simulator, CostsThatMakeARunLastDaysAreRefusedNotReportedAsADeadlock) {
  GraphBuilder g;
  const OpId op = g.op("op");
  const TaskId a = g.task(op, int64_t{1} << 40, TaskKind::kLinear, int64_t{1} << 40);
  const Module m = g.schedule({{a}});
  CostParams slow = unit_costs();
  slow.mem_bandwidth = slow.sm_bandwidth = 1e3;  // a TiB at a KB/s
  CostParams compute = unit_costs();
  compute.defaults.flops_per_ns = 1e-300;  // infinite compute time
  for (const CostParams& c : {slow, compute}) {
    const std::string msg = simulate_error(m, c, 1);
    EXPECT_NE(msg.find("simulator: the run lasts longer than 1125899906842624 ns (about 13 days) by step 0"),
              std::string::npos) << msg;
  }
}

TEST(Simulator, RejectsCostsOutOfBoundsAndStepsBeyondTheLimit) {
  GraphBuilder g;
  const Module m = g.schedule({{g.task(g.op("op"), 1)}});
  CostParams c = unit_costs();
  c.mem_bandwidth = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(simulate_error(m, c, 1),
            "simulator: cost parameters: mem_bandwidth (bytes/s) must be in 1000..1e+15, got nan");
  c = unit_costs();
  c.event_latency_ns = -5;
  EXPECT_EQ(simulate_error(m, c, 1), "simulator: cost parameters: event_latency_ns must be in 0..1e+09, got -5");
  EXPECT_EQ(simulate_error(m, unit_costs(), int64_t{1} << 31),
            "simulator: steps must be in 0..1048576, got 2147483648");
}

TEST(Simulator, RejectsAnUnscheduledModule) {
  Module m;
  EXPECT_THROW(simulate(m, unit_costs(), 1), Error);
}

}  // namespace
}  // namespace mpk
