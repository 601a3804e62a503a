// The layered verifier. Each layer returns diagnostics naming the rule broken:
//   structure: ids resolve, names unique, regions inside tensor bounds, dtypes and
//              shapes consistent per operator kind, event targets == producer counts.
//              Rules: structure.unknown-tensor, structure.bad-id, structure.bad-enum,
//              structure.bad-shape, structure.duplicate-name, structure.attr-key,
//              structure.region-rank, structure.region-out-of-bounds,
//              structure.op-signature, structure.task-kind, structure.event-target,
//              structure.event-distance, structure.event-list;
//   graph:     the event graph (step_distance 0) is acyclic (graph.cycle); once the
//              graph has events or a schedule, every pair of tasks whose regions
//              conflict (read after write: graph.unordered-read; write after read or
//              write: graph.unordered-write) is ordered by a chain of events: of
//              distance 0 when the earlier task in id order comes first in the step,
//              of total distance <= 1 from the later task's previous step otherwise;
//              with a schedule, every task is on exactly one worker
//              (graph.unscheduled-task, graph.task-scheduled-twice) and there are no
//              more workers than SMs (graph.bad-worker);
//   schedule:  deadlock freedom: step_distance-0 dependency edges plus same-worker
//              order edges form no cycle (schedule.deadlock).
#pragma once

#include <string>
#include <vector>

#include "ir/module.h"

namespace mpk {

struct Diagnostic {
  std::string rule;     // e.g. "structure.region-out-of-bounds", "schedule.deadlock"
  std::string message;  // one line naming the objects involved
};

std::vector<Diagnostic> verify_structure(const Module& m);
std::vector<Diagnostic> verify_graph(const Module& m);     // no-op without tasks
std::vector<Diagnostic> verify_schedule(const Module& m);  // no-op without a schedule

// All layers, each only if the previous ones passed.
std::vector<Diagnostic> verify_module(const Module& m);

// Throws mpk::Error("verifier: <rule>: <message>" for the first few diagnostics).
void verify_or_throw(const Module& m);

// The operator-kind signature check behind "structure.op-signature" (docs/ir.md,
// operator table): arity, ranks, dims, dtypes and required attrs. Returns "" when `op`
// is consistent, else one line naming the first problem. Ids must be valid.
std::string op_signature_problem(const Program& p, const Operator& op);

// Collects diagnostics, keeping at most kMaxPerRule per rule; finish() appends one
// "<n> more" diagnostic for each rule that went over.
class DiagnosticSink {
 public:
  static constexpr int kMaxPerRule = 20;
  void add(const std::string& rule, const std::string& message);
  bool empty() const { return out_.empty(); }
  std::vector<Diagnostic> finish();

 private:
  std::vector<Diagnostic> out_;
  std::vector<std::pair<std::string, int>> counts_;
};

// "task 12 (L0.q_proj:linear)": a task named for diagnostics (`t` must be a task id).
std::string describe_task(const Module& m, TaskId t);

}  // namespace mpk
