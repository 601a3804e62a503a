// Small hand-built scheduled task graphs for the traces tests: tasks with given bytes,
// events between them, and per-worker lists, with no tensors or regions.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "ir/module.h"
#include "ir/cost_params.h"
#include "traces/trace_db.h"

namespace mpk::testing {

class GraphBuilder {
 public:
  explicit GraphBuilder(int32_t sm_count = 4) {
    m_.name = "hand-built";
    m_.provenance = {"test", "hand", "mpk test"};
    m_.attrs["batch"] = int64_t{1};
    m_.machine.sm_count = sm_count;
  }

  // One operator per call; tasks name it by id.
  OpId op(const std::string& name, OpKind kind = OpKind::kLinear, int32_t layer = -1) {
    Operator o;
    o.name = name;
    o.kind = kind;
    o.layer = layer;
    return m_.program.add_op(o);
  }

  TaskId task(OpId op, int64_t bytes, TaskKind kind = TaskKind::kLinear, int64_t flops = 0) {
    Task t;
    t.op = op;
    t.kind = kind;
    t.bytes = bytes;
    t.flops = flops;
    m_.graph.tasks.push_back(t);
    return static_cast<TaskId>(m_.graph.tasks.size() - 1);
  }

  // Share `share` of `shares` of a cooperative linear (docs/ir.md, "Cooperative linears").
  TaskId share(OpId op, int64_t bytes, int64_t share, int64_t shares) {
    const TaskId t = task(op, bytes);
    m_.graph.tasks.back().attrs = {{"share", share}, {"shares", shares}, {"unit_rows", int64_t{8}}};
    return t;
  }

  EventId event(std::vector<TaskId> producers, std::vector<TaskId> consumers,
                int32_t distance = 0) {
    Event e;
    e.target = static_cast<int64_t>(producers.size());
    e.producers = std::move(producers);
    e.consumers = std::move(consumers);
    e.step_distance = distance;
    m_.graph.events.push_back(e);
    return static_cast<EventId>(m_.graph.events.size() - 1);
  }

  Module schedule(std::vector<std::vector<TaskId>> workers, const std::string& policy = "hand") {
    m_.graph.schedule.policy = policy;
    m_.graph.schedule.workers = std::move(workers);
    return m_;
  }

 private:
  Module m_;
};

// Costs with round numbers: no fixed cost, bytes at 1 byte/ns per SM, no latency.
inline CostParams unit_costs() {
  CostParams c;
  c.mem_bandwidth = 1e12;  // 1000 bytes/ns in total
  c.sm_bandwidth = 1e9;    // 1 byte/ns per SM
  c.event_latency_ns = 0;
  c.dispatch_ns = 0;
  c.defaults = {0.0, 1.0, 0.0};
  return c;
}

// Two layers of norm -> {q, k} -> o on two workers, q and k run as one linear group.
inline Module grouped_graph() {
  GraphBuilder g(2);
  std::vector<TaskId> t;
  for (int l = 0; l < 2; ++l)
    for (const char* name : {"input_norm", "q_proj", "k_proj", "o_proj"})
      t.push_back(g.task(g.op("L" + std::to_string(l) + "." + name, OpKind::kLinear, l), 64));
  for (int l = 0; l < 2; ++l) {
    const TaskId n = t[4 * l], q = t[4 * l + 1], k = t[4 * l + 2], o = t[4 * l + 3];
    g.event({n}, {q, k});
    g.event({q, k}, {o});
    if (l == 1) g.event({t[3]}, {n});
  }
  return g.schedule({{t[0], t[3], t[4], t[7]}, {t[1], t[2], t[5], t[6]}});
}

// task, step, worker, sm, wait_begin, start, end
inline std::vector<Execution> grouped_execs() {
  return {{0, 0, 0, 0, 0, 0, 100},     {1, 0, 1, 1, 0, 110, 300},   {2, 0, 1, 1, 0, 110, 300},
          {3, 0, 0, 0, 100, 310, 400}, {4, 0, 0, 0, 400, 405, 450}, {5, 0, 1, 1, 300, 460, 700},
          {6, 0, 1, 1, 300, 460, 700}, {7, 0, 0, 0, 450, 720, 800}};
}

// A fresh path in the test's temp dir, removed (with its journal) when it goes away.
class TempPath {
 public:
  explicit TempPath(const std::string& name) {
    const char* dir = std::getenv("TMPDIR");
    path_ = std::string(dir ? dir : "/tmp") + "/mpk_traces_" + std::to_string(::getpid()) + "_" + name;
    remove_all();
  }
  ~TempPath() { remove_all(); }
  const std::string& str() const { return path_; }

 private:
  void remove_all() {
    std::remove(path_.c_str());
    std::remove((path_ + "-journal").c_str());
  }
  std::string path_;
};

}  // namespace mpk::testing
