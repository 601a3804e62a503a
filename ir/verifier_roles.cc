// structure.role and structure.unused-tensor (ir/verifier_rules.h): what each tensor role
// allows, checked on the operators (the tasks' scratch: verifier_tasks.cc). The runtime
// binds weights to checkpoint memory (read-only, possibly a read-only mmap), supplies one
// input, the prompt, through the tokens an embedding reads (an argmax writes the next
// ones), and zeroes every other tensor once: so a written weight would corrupt the
// checkpoint, and a tensor that operators read but none writes, unless it is a weight
// or the tokens, would read as zeros.
#include "ir/verifier_rules.h"

namespace mpk {
namespace {

std::string tensor_text(const Tensor& t) { return "tensor '" + t.name + "' (" + std::string(name_of(t.role)) + ")"; }

// The tokens an argmax (or an lm_head with argmax) writes for the next step.
bool writes_tokens(const Operator& op, TensorId t) {
  if (op.kind == OpKind::kArgmax) return op.outputs[0] == t;
  return linear_form(op).tokens == t;
}

}  // namespace

void check_roles(const Module& m, DiagnosticSink& sink) {
  const Program& p = m.program;
  const size_t n = p.tensors.size();
  std::vector<OpId> writer(n, -1), reader(n, -1);  // one operator that writes / reads each
  std::vector<char> on_task(n, 0);
  for (const Task& t : m.graph.tasks)
    for (const auto* list : {&t.reads, &t.writes})
      for (const Region& r : *list) on_task[r.tensor] = 1;

  for (size_t o = 0; o < p.ops.size(); ++o) {
    const Operator& op = p.ops[o];
    const std::string who = "operator '" + op.name + "'";
    for (TensorId t : op.outputs) {
      writer[t] = static_cast<OpId>(o);
      const Tensor& tt = p.tensors[t];
      if (tt.role == TensorRole::kWeight)
        sink.add("structure.role", who + " writes " + tensor_text(tt) + ": weights are read-only");
      else if (tt.role == TensorRole::kInput && !writes_tokens(op, t))
        sink.add("structure.role", who + " writes " + tensor_text(tt) +
                                       ": only an argmax writes an input (the next step's tokens)");
    }
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      const TensorId t = op.inputs[i];
      reader[t] = static_cast<OpId>(o);
      if (p.tensors[t].role == TensorRole::kInput && !(op.kind == OpKind::kEmbedding && i == 1))
        sink.add("structure.role", who + " reads " + tensor_text(p.tensors[t]) +
                                       ": the runtime supplies only the tokens an embedding reads (any other "
                                       "input would read as zeros)");
    }
    for (const auto* list : {&op.inputs, &op.outputs})
      for (TensorId t : *list)
        if (p.tensors[t].role == TensorRole::kScratch)
          sink.add("structure.role", who + " has " + tensor_text(p.tensors[t]) +
                                         " as an operand: scratch tensors belong to the tasks of one operator");
  }

  for (size_t t = 0; t < n; ++t) {
    const Tensor& tt = p.tensors[t];
    const std::string what = "tensor " + std::to_string(t) + " '" + tt.name + "'";
    if (writer[t] < 0 && reader[t] < 0 && !on_task[t]) {
      sink.add("structure.unused-tensor", what + " (" + std::string(name_of(tt.role)) +
                                              ") is used by no operator and no task");
    } else if (reader[t] >= 0 && writer[t] < 0 && tt.role != TensorRole::kWeight &&
               tt.role != TensorRole::kInput) {
      sink.add("structure.role", "operator '" + p.ops[reader[t]].name + "' reads " + tensor_text(tt) +
                                     ", which no operator writes: only weights and inputs come from outside "
                                     "the step (it would read as zeros)");
    }
  }
}

}  // namespace mpk
