// The layered verifier. Each layer returns diagnostics naming the rule broken:
//   structure: ids resolve, names unique, regions inside tensor bounds, dtypes and
//              shapes consistent per operator kind, event targets == producer counts.
//              Rules: structure.unknown-tensor, structure.bad-id, structure.bad-enum,
//              structure.bad-shape, structure.duplicate-name, structure.attr-key,
//              structure.region-rank, structure.region-out-of-bounds,
//              structure.op-signature, structure.task-kind, structure.event-target,
//              structure.event-distance, structure.event-list;
//              then, once those hold (ir/verifier_rules.h):
//              structure.tensor-size (element counts and bytes within kMaxTensorBytes,
//              non-weight bytes within kMaxStepBytes), structure.role (weights never
//              written, an input is the tokens: read only by an embedding, written only
//              by an argmax; scratch only on tasks; a read tensor is written by an
//              operator or is a weight or input),
//              structure.unused-tensor, structure.batch (one batch: the first
//              dimension of every non-weight tensor), structure.vocab (an argmax's
//              tokens index the table of the embedding that reads them),
//              structure.module-attr (module
//              attrs agree with the tensors and operators), and for a decomposed graph
//              structure.task-order (tasks in program order), structure.task-regions
//              (each task's regions are its kind's, docs/ir.md "Tasks"),
//              structure.task-cost (bytes and flops in range) and structure.coverage
//              (per operator, its tasks' writes are pairwise disjoint and exactly
//              cover its outputs and scratch);
//   graph:     the event graph (step_distance 0) is acyclic (graph.cycle); once the
//              graph has events or a schedule, every pair of tasks whose regions
//              conflict (read after write: graph.unordered-read; write after read or
//              write: graph.unordered-write) is ordered by a chain of events: of
//              distance 0 when the earlier task in id order comes first in the step,
//              of total distance <= 1 from the later task's previous step otherwise;
//              with a schedule, every task is on exactly one worker
//              (graph.unscheduled-task, graph.task-scheduled-twice) and there are no
//              more workers than SMs (graph.bad-worker); a graph whose cross-step check
//              would need more than 4 GiB is refused (graph.too-large);
//   schedule:  deadlock freedom: step_distance-0 dependency edges plus same-worker
//              order edges form no cycle (schedule.deadlock).
#pragma once

#include <string>
#include <vector>

#include "ir/module.h"

namespace mpk {

// Plausible upper bounds on a module (the largest models it must describe are Llama 3
// 405B and Qwen3 235B): the largest real tensor is Llama 3 405B's embedding (4.2 GB), and
// its KV caches at batch 8 and 131072 positions are 4 GiB per layer, 504 GiB in all.
inline constexpr int64_t kMaxTensorBytes = int64_t{1} << 40;  // 1 TiB per tensor
inline constexpr int64_t kMaxStepBytes = int64_t{1} << 41;    // 2 TiB of non-weight tensors
// A task's bytes are at most the bytes of its regions (a handful of tensors); its flops
// are a few per weight element per batch row (Llama 3 405B's whole lm_head at batch 8
// is 3.4e10).
inline constexpr int64_t kMaxTaskBytes = int64_t{1} << 44;
inline constexpr int64_t kMaxTaskFlops = int64_t{1} << 50;

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

// The one operator signature check (docs/ir.md, operator table), behind the verifier's
// "structure.op-signature", the CPU executor's check of each operator and decompose's:
// operands that exist with positive dimensions, then the kind's arity, ranks, dims,
// dtypes and required attrs (each family states its own: ir/ops/<family>.cc). Returns
// "" when `op` is consistent, else one line naming the first problem.
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
