// The plain reference: whole operators in program order, one step after another, no
// tasks, no events. It is the oracle that the decomposed, scheduled task graph must
// match (runtime/cpu/executor.h).
#pragma once

#include <cstdint>
#include <vector>

#include "ir/module.h"
#include "runtime/cpu/run_common.h"
#include "runtime/weights/weights.h"

namespace mpk {

// Checks that an operator's inputs, outputs, shapes, dtypes and attrs are what its
// kind needs (docs/ir.md); throws mpk::Error("op '<name>': <problem>").
void check_op(const Program& p, OpId id);

// Runs one whole operator for ctx.step.
void run_op(const Program& p, OpId id, TensorStore& store, const StepContext& ctx);

// Runs `steps` decode steps of `m`'s Program (its task graph, if any, is ignored).
// Throws mpk::Error for a malformed program, missing weights or bad inputs.
CpuRunResult run_reference(const Module& m, const Weights& w, int64_t steps,
                           const std::vector<int64_t>& prompt, int64_t prompt_rows = 1);

}  // namespace mpk
