// Per-task CPU kernels. A task computes exactly its write regions from its read regions
// (docs/ir.md, "Tasks"); the kernel is driven only by the task kind, its operator's
// attrs and the task's regions, so any decomposition that follows the region table
// works. prepare_task() resolves and checks a task once (regions inside their tensors,
// the regions the kernel will touch declared, shapes consistent) and throws
// mpk::Error naming the task otherwise; run_task() then executes it for one step.
#pragma once

#include <string>
#include <vector>

#include "ir/module.h"
#include "ir/verifier.h"  // describe_task
#include "runtime/cpu/numerics.h"

namespace mpk {

struct TaskPlan {
  TaskId id = -1;
  TaskKind kind = TaskKind::kLinear;
  OpId op = -1;
  TensorId in0 = -1, in1 = -1, in2 = -1;  // by kind: the operands the kernel reads
  TensorId out0 = -1, out1 = -1, out2 = -1;  // and writes (an lm_head's argmax partial: out1, out2)
  int64_t b0 = 0, b1 = 0;                 // batch rows
  int64_t c0 = 0, c1 = 0;                 // columns; kv heads for kv_append / attention_partial;
                                          // query heads for attention / attention_merge; vocab range
                                          // for argmax_partial
  int64_t s0 = 0, s1 = 0;                 // attention_partial: position range
  int64_t slot = 0;                       // attention_partial: split; argmax partial: partial index
  double eps = 0;
  TensorId residual = -1, up = -1;        // linear (ir/module.h LinearForm)
  TensorId norm = -1;                     // linear, lm_head: its norm weight; a fused attention's
                                          // kv_append: k's, attention*: q's
  TensorId k = -1, v = -1, k_norm = -1;   // a fused attention task with one split: its kv head's
  bool appends = false;                   // k and v, which it appends, or else prepares itself
  int64_t head_dim = 0;
  CoopShare coop;                         // a cooperative linear's share: units share, share + shares, ...
  AttentionShape attention;
  std::vector<float> inv_freq;            // rope; a kv_append or fused attention that ropes
};

// Throws mpk::Error("<task>: <problem>").
TaskPlan prepare_task(const Module& m, TaskId id);

void run_task(const TaskPlan& plan, TensorStore& store, const StepContext& ctx);

}  // namespace mpk
