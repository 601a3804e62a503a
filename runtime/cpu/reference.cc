// Whole-operator execution: the operator check, one operator (its family's
// run_<family>_op, runtime/cpu/ops/), and the reference run.
#include "runtime/cpu/reference.h"

#include <string>

#include "ir/error.h"
#include "ir/ops/tensor_parallel.h"
#include "ir/verifier.h"
#include "runtime/cpu/ops/cpu_ops.h"

namespace mpk {

void check_op(const Program& p, OpId id) {
  if (id < 0 || id >= static_cast<OpId>(p.ops.size())) throw Error("no operator " + std::to_string(id));
  const Operator& op = p.ops[id];
  const std::string problem = op_signature_problem(p, op);
  if (problem.empty()) return;
  const std::string kind = static_cast<int>(op.kind) < kNumOpKinds ? std::string(name_of(op.kind)) : "?";
  throw Error("op '" + op.name + "' (" + kind + "): " + problem);
}

void run_op(const Program& p, OpId id, TensorStore& st, const StepContext& ctx) {
  const Operator& op = p.ops[id];
  switch (op.kind) {
#define MPK_OP_KIND(Name, name, family, proto, rgb) \
  case OpKind::k##Name:                             \
    return cpu::run_##family##_op(p, op, st, ctx);
#include "ir/kinds.def"
  }
}

CpuRunResult run_reference(const Module& m, const Weights& w, int64_t steps,
                           const std::vector<int64_t>& prompt, int64_t prompt_rows) {
  const Program& p = m.program;
  if (tp_ranks(m) > 1)
    throw Error("the reference runs one rank; the module is sharded for " + std::to_string(tp_ranks(m)) +
                " tensor-parallel ranks");
  for (OpId id = 0; id < static_cast<OpId>(p.ops.size()); ++id) check_op(p, id);
  const RunTensors rt = find_run_tensors(p);
  check_run_inputs(rt, steps, prompt, prompt_rows);
  TensorStore store(p, w);
  for (const Operator& op : p.ops)
    for (TensorId out : op.outputs) store.require_writable(out, "operator '" + op.name + "'");
  StepRecorder rec(steps, rt.batch);
  const auto start = std::chrono::steady_clock::now();
  for (int64_t s = 0; s < steps; ++s) {
    const StepContext ctx{s, &prompt, &rec, prompt_rows};
    for (OpId id = 0; id < static_cast<OpId>(p.ops.size()); ++id) run_op(p, id, store, ctx);
  }
  CpuRunResult r = collect_result(rec, store, rt, start);
  r.tasks_run = steps * static_cast<int64_t>(p.ops.size());
  return r;
}

}  // namespace mpk
