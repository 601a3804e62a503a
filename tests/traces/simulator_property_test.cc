// Properties of the simulator on random graphs and schedules: every task runs once per
// step, in list order on its worker, never before its events' releases plus latency,
// never shorter than its fixed time; bandwidth limits hold; the writer accepts the
// result; and its bubbles cover every worker's idle time exactly, in order.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "tests/traces/test_graphs.h"
#include "traces/run_derive.h"
#include "traces/simulator.h"

namespace mpk {
namespace {

using testing::GraphBuilder;

// A random layered DAG with events between consecutive layers and one cross-step
// event, scheduled by listing the layers in order over `workers` workers.
Module random_graph(std::mt19937& rng, int workers) {
  GraphBuilder g(workers);
  const OpId op = g.op("op");
  std::uniform_int_distribution<int> width(1, 2 * workers), bytes(0, 5000), kind(0, 2);
  std::vector<std::vector<TaskId>> lists(workers);
  std::vector<TaskId> prev, first;
  const int layers = 3 + static_cast<int>(rng() % 5);
  for (int l = 0; l < layers; ++l) {
    std::vector<TaskId> cur;
    const int n = width(rng);
    for (int i = 0; i < n; ++i) {
      const TaskKind k = kind(rng) == 0 ? TaskKind::kRmsNorm : TaskKind::kLinear;
      const TaskId t = g.task(op, bytes(rng), k, static_cast<int64_t>(rng() % 20000));
      lists[rng() % workers].push_back(t);
      cur.push_back(t);
    }
    if (!prev.empty()) {
      // Each task of this layer waits on a random non-empty subset of the previous one.
      for (TaskId c : cur) {
        std::vector<TaskId> ps;
        for (TaskId p : prev)
          if (rng() % 2) ps.push_back(p);
        if (ps.empty()) ps.push_back(prev[rng() % prev.size()]);
        g.event(ps, {c});
      }
    } else {
      first = cur;
    }
    prev = cur;
  }
  g.event(prev, first, 1);
  return g.schedule(lists);
}

CostParams random_costs(std::mt19937& rng, bool stream_ahead) {
  CostParams c;
  c.mem_bandwidth = 1e9 * (1 + rng() % 8);
  c.sm_bandwidth = 1e9;
  c.event_latency_ns = static_cast<double>(rng() % 500);
  c.dispatch_ns = static_cast<double>(rng() % 50);
  c.defaults = {static_cast<double>(rng() % 300), 1.0, 2.0, 0.0};
  c.kinds[static_cast<size_t>(TaskKind::kLinear)].prefetch = 1.0;
  c.kinds[static_cast<size_t>(TaskKind::kLinear)].bytes_scale = 0.5 + (rng() % 100) / 100.0;
  c.prefetch_bytes = stream_ahead ? static_cast<double>(500 + rng() % 4000) : 0;
  return c;
}

void check_run(const Module& m, const CostParams& c, const std::vector<Execution>& x, int steps) {
  const size_t n = m.graph.tasks.size();
  ASSERT_EQ(x.size(), n * steps);
  const ExecutionIndex index(n, steps, x);
  const auto places = schedule_places(m);
  for (const Execution& e : x) {
    EXPECT_LE(e.wait_begin_ns, e.start_ns);
    EXPECT_GE(e.end_ns - e.start_ns, static_cast<int64_t>(c.cost_of(m.graph.tasks[e.task].kind).fixed_ns) - 1);
    EXPECT_EQ(e.worker, places[e.task].worker);
    // Each waited event had enough releases `latency` before the start. Releases come
    // from producer ends; count those early enough.
    for (size_t ev = 0; ev < m.graph.events.size(); ++ev) {
      const Event& E = m.graph.events[ev];
      if (std::find(E.consumers.begin(), E.consumers.end(), e.task) == E.consumers.end()) continue;
      const int64_t need = E.target * (e.step + 1 - E.step_distance);
      if (need <= 0) continue;
      int64_t released = 0;
      for (TaskId p : E.producers)
        for (int k = 0; k < steps; ++k) {
          const int64_t i = index.find(p, k);
          if (i >= 0 && x[i].end_ns + static_cast<int64_t>(c.event_latency_ns) <= e.start_ns + 1) ++released;
        }
      EXPECT_GE(released, need) << "task " << e.task << " step " << e.step << " event " << ev;
    }
  }
  // Per worker: list order, no overlap, dispatch gap respected.
  for (size_t w = 0; w < m.graph.schedule.workers.size(); ++w) {
    int64_t prev_end = -1;
    for (int k = 0; k < steps; ++k)
      for (TaskId t : m.graph.schedule.workers[w]) {
        const Execution& e = x[index.find(t, k)];
        if (prev_end >= 0) {
          EXPECT_GE(e.wait_begin_ns + 1, prev_end + static_cast<int64_t>(c.dispatch_ns));
          EXPECT_GE(e.start_ns, prev_end);
        }
        prev_end = e.end_ns;
      }
  }
  // The writer's validation accepts it.
  std::vector<Execution> copy = x;
  EXPECT_NO_THROW(validate_and_normalize(m, copy, steps));
}

TEST(SimulatorProperties, RandomGraphsAndSchedules) {
  std::mt19937 rng(20261122);
  for (int round = 0; round < 200; ++round) {
    const int workers = 1 + static_cast<int>(rng() % 6);
    const Module m = random_graph(rng, workers);
    const bool ahead = round % 2 == 1;
    const CostParams c = random_costs(rng, ahead);
    const int steps = 1 + static_cast<int>(rng() % 4);
    SCOPED_TRACE("round " + std::to_string(round));
    const auto x = simulate(m, c, steps);
    check_run(m, c, x, steps);
    // Without contention for bandwidth, streaming ahead never makes a run slower.
    // (With contention it can: an SM streaming ahead for a task that is not urgent
    // takes bandwidth from one that is.)
    if (ahead) {
      CostParams on = c;
      on.mem_bandwidth = c.sm_bandwidth * workers;
      CostParams off = on;
      off.prefetch_bytes = 0;
      int64_t with = 0, without = 0;
      for (const Execution& e : simulate(m, on, steps)) with = std::max(with, e.end_ns);
      for (const Execution& e : simulate(m, off, steps)) without = std::max(without, e.end_ns);
      EXPECT_LE(with, without + 1);
    }
  }
}

TEST(SimulatorProperties, AllBusyStreamingNeverBeatsTheBandwidth) {
  // Independent tasks on every worker: the run cannot move bytes faster than the
  // shared bandwidth allows.
  GraphBuilder g(8);
  const OpId op = g.op("op");
  std::vector<std::vector<TaskId>> lists(8);
  int64_t total = 0;
  for (int w = 0; w < 8; ++w)
    for (int i = 0; i < 5; ++i) {
      const int64_t b = 1000 + 137 * ((w * 5 + i) % 11);
      lists[w].push_back(g.task(op, b));
      total += b;
    }
  const Module m = g.schedule(lists);
  CostParams c = testing::unit_costs();
  c.mem_bandwidth = 2e9;  // 2 bytes/ns shared by 8 SMs of 1 byte/ns each
  int64_t end = 0;
  for (const Execution& e : simulate(m, c, 1)) end = std::max(end, e.end_ns);
  EXPECT_GE(end, total / 2);
  EXPECT_LE(end, total / 2 + 2 * 2500);  // only the tail runs below the shared limit
}

TEST(BubbleProperties, EveryWorkersTimelineIsCoveredExactly) {
  std::mt19937 rng(7);
  for (int round = 0; round < 100; ++round) {
    const int workers = 1 + static_cast<int>(rng() % 6);
    const Module m = random_graph(rng, workers);
    const CostParams c = random_costs(rng, round % 2 == 1);
    const int steps = 1 + static_cast<int>(rng() % 4);
    std::vector<Execution> x = simulate(m, c, steps);
    validate_and_normalize(m, x, steps);
    const DerivedRun d = derive_run(m, x, steps);
    SCOPED_TRACE("round " + std::to_string(round));
    std::vector<int64_t> covered(workers, 0), last_end(workers, 0);
    for (const Execution& e : x) covered[e.worker] += e.end_ns - e.start_ns;
    for (const Bubble& b : d.bubbles) {
      ASSERT_LT(b.start_ns, b.end_ns);
      EXPECT_GE(b.start_ns, last_end[b.worker]);  // ordered, no overlap
      last_end[b.worker] = b.end_ns;
      covered[b.worker] += b.end_ns - b.start_ns;
      if (b.cause == BubbleCause::kWait) {
        ASSERT_GE(b.event, 0);
        const auto& ps = m.graph.events[b.event].producers;
        EXPECT_NE(std::find(ps.begin(), ps.end(), b.producer), ps.end());
      }
    }
    for (int w = 0; w < workers; ++w) EXPECT_EQ(covered[w], d.duration_ns) << "worker " << w;
  }
}

}  // namespace
}  // namespace mpk
