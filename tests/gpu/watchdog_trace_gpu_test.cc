// The watchdog (an event target that can never be reached stops the kernel with a
// report instead of hanging it) and in-kernel tracing (one record per task execution,
// overflow counted and never written). Skipped without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "tests/gpu/gpu_test_util.h"

namespace mpk {
namespace {

using namespace gputest;

TEST(GpuWatchdog, UnreachableEventStopsTheKernelAndNamesTheWait) {
  MPK_REQUIRE_GPU();
  Module m = scheduled("tiny", pipeline_for("critical-path"));
  // Pick a same-step event and ask for one more producer than it has.
  EventId bad = -1;
  for (EventId e = 0; e < static_cast<EventId>(m.graph.events.size()); ++e)
    if (m.graph.events[e].step_distance == 0) {
      bad = e;
      break;
    }
  ASSERT_GE(bad, 0);
  m.graph.events[bad].target += 1;
  const Weights w = random_weights(m, 1);
  GpuOptions go;
  go.watchdog_s = 0.2;
  GpuMegakernel g(m, w, go);
  GpuRunOptions o;
  o.steps = 4;
  try {
    g.run(o);
    FAIL() << "the run should have been stopped by the watchdog";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("watchdog"), std::string::npos) << msg;
    EXPECT_NE(msg.find("step 0"), std::string::npos) << msg;
    EXPECT_NE(msg.find("worker "), std::string::npos) << msg;
    // The first wait to time out is on the bad event or on one that (same step) waits
    // for it through its producers.
    std::set<EventId> blocked = {bad};
    for (bool grew = true; grew;) {
      grew = false;
      for (EventId e = 0; e < static_cast<EventId>(m.graph.events.size()); ++e) {
        if (blocked.count(e) || m.graph.events[e].step_distance != 0) continue;
        for (TaskId p : m.graph.events[e].producers)
          for (EventId b : blocked)
            if (std::binary_search(m.graph.events[b].consumers.begin(), m.graph.events[b].consumers.end(), p) &&
                blocked.insert(e).second)
              grew = true;
      }
    }
    const size_t at = msg.find(" on event ");
    ASSERT_NE(at, std::string::npos) << msg;
    EXPECT_TRUE(blocked.count(std::stoi(msg.substr(at + 10)))) << msg;
  }
  // The GPU is still usable afterwards.
  const Module good = scheduled("tiny", pipeline_for("critical-path"));
  GpuMegakernel g2(good, w);
  EXPECT_EQ(g2.run(o).tokens.size(), 4u);
}

TEST(GpuTrace, OneRecordPerTaskExecutionOnItsWorker) {
  MPK_REQUIRE_GPU();
  const Module m = scheduled("tiny", pipeline_for("critical-path"));
  GpuMegakernel g(m, random_weights(m, 2));
  GpuRunOptions o;
  o.steps = 6;
  const GpuRunResult plain = g.run(o);
  o.trace = true;
  const GpuRunResult r = g.run(o);
  EXPECT_EQ(r.tokens, plain.tokens);
  EXPECT_EQ(r.trace_overflow, 0u);
  ASSERT_EQ(r.trace.size(), m.graph.tasks.size() * 6);
  std::vector<int32_t> worker_of(m.graph.tasks.size(), -1);
  for (size_t w = 0; w < m.graph.schedule.workers.size(); ++w)
    for (TaskId t : m.graph.schedule.workers[w]) worker_of[t] = static_cast<int32_t>(w);
  std::set<std::pair<int32_t, int32_t>> seen;
  for (const abi::TraceRecord& t : r.trace) {
    ASSERT_GE(t.task, 0);
    ASSERT_LT(t.task, static_cast<int32_t>(m.graph.tasks.size()));
    EXPECT_EQ(t.worker, worker_of[t.task]);
    EXPECT_LE(t.wait_begin_ns, t.start_ns);
    EXPECT_LE(t.start_ns, t.end_ns);
    EXPECT_TRUE(seen.insert({t.task, t.step}).second);
  }
  // Event order: a consumer never starts before its same-step producers end.
  std::map<std::pair<int32_t, int32_t>, const abi::TraceRecord*> by;
  for (const abi::TraceRecord& t : r.trace) by[{t.task, t.step}] = &t;
  for (const Event& e : m.graph.events) {
    if (e.step_distance != 0) continue;
    for (TaskId c : e.consumers)
      for (TaskId p : e.producers)
        for (int32_t s = 0; s < 6; ++s)
          EXPECT_GE(by[std::make_pair(c, s)]->start_ns, by[std::make_pair(p, s)]->end_ns);
  }
}

TEST(GpuTrace, OverflowIsCountedNeverWritten) {
  MPK_REQUIRE_GPU();
  const Module m = scheduled("tiny", pipeline_for("round-robin"));
  GpuMegakernel g(m, random_weights(m, 2));
  GpuRunOptions o;
  o.steps = 8;
  o.trace = true;
  o.trace_capacity = 3;
  const GpuRunResult r = g.run(o);
  size_t expected_kept = 0;
  for (const auto& list : m.graph.schedule.workers) expected_kept += std::min<size_t>(list.size() * 8, 3);
  EXPECT_EQ(r.trace.size(), expected_kept);
  EXPECT_EQ(r.trace.size() + r.trace_overflow, m.graph.tasks.size() * 8);
  for (const abi::TraceRecord& t : r.trace) EXPECT_EQ(t.step, 0);  // the first records kept
}

}  // namespace
}  // namespace mpk
