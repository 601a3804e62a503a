// Per-task CPU kernels. A task computes exactly its write regions from its read regions
// (docs/ir.md, "Tasks"); the kernel is driven only by the task kind, its operator's
// attrs and the task's regions, so any decomposition that follows the region table
// works. prepare_task() resolves and checks a task once (regions inside their tensors,
// the regions the kernel will touch declared, shapes consistent) and throws
// mpk::Error naming the task otherwise; run_task() then executes it for one step. Each
// family's planner is its file runtime/cpu/ops/<family>.cc.
#pragma once

#include "ir/module.h"
#include "ir/verifier.h"  // describe_task
#include "runtime/cpu/numerics.h"
#include "runtime/cpu/ops/cpu_ops.h"

namespace mpk {

struct TaskPlan {
  TaskId id = -1;
  TaskKind kind = TaskKind::kLinear;
  OpId op = -1;
  cpu::TaskRun run;  // the task for one step, its operands resolved
};

// Throws mpk::Error("<task>: <problem>").
TaskPlan prepare_task(const Module& m, TaskId id);

void run_task(const TaskPlan& plan, TensorStore& store, const StepContext& ctx);

}  // namespace mpk
