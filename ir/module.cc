// In-memory IR helpers: lookups and use-list maintenance.
#include "ir/module.h"

#include <atomic>
#include <variant>

#include "ir/checked.h"
#include "ir/version.h"

namespace mpk {

int64_t Tensor::num_elements() const { return checked_product(shape, "tensor '" + name + "' element count"); }

int64_t Tensor::num_bytes() const { return checked_mul(num_elements(), size_of(dtype), "tensor '" + name + "' bytes"); }

TensorId Program::add_tensor(Tensor t) {
  tensors.push_back(std::move(t));
  return static_cast<TensorId>(tensors.size() - 1);
}

OpId Program::add_op(Operator op) {
  ops.push_back(std::move(op));
  return static_cast<OpId>(ops.size() - 1);
}

TensorId Program::find_tensor(const std::string& name) const {
  for (size_t i = 0; i < tensors.size(); ++i)
    if (tensors[i].name == name) return static_cast<TensorId>(i);
  return -1;
}

OpId Program::find_op(const std::string& name) const {
  for (size_t i = 0; i < ops.size(); ++i)
    if (ops[i].name == name) return static_cast<OpId>(i);
  return -1;
}

void Program::rebuild_use_lists() {
  writers.assign(tensors.size(), {});
  readers.assign(tensors.size(), {});
  for (size_t i = 0; i < ops.size(); ++i) {
    for (TensorId t : ops[i].inputs)
      if (t >= 0 && t < static_cast<TensorId>(tensors.size())) readers[t].push_back(i);
    for (TensorId t : ops[i].outputs)
      if (t >= 0 && t < static_cast<TensorId>(tensors.size())) writers[t].push_back(i);
  }
}

uint64_t new_graph_generation() {
  static std::atomic<uint64_t> last{0};
  return ++last;
}

std::string tool_version() { return std::string("mpk ") + kMpkVersion; }

std::vector<int> task_phases(const Module& m) {
  const auto& tasks = m.graph.tasks;
  std::vector<char> one_split(m.program.ops.size(), 0);
  for (const Task& t : tasks)
    if (t.kind == TaskKind::kAttention && t.op >= 0 && t.op < static_cast<OpId>(one_split.size())) one_split[t.op] = 1;
  std::vector<int> phase(tasks.size(), 1);
  for (size_t i = 0; i < tasks.size(); ++i) {
    const Task& t = tasks[i];
    if (t.kind == TaskKind::kKvAppend && t.op >= 0 && t.op < static_cast<OpId>(one_split.size()) &&
        m.program.ops[t.op].kind == OpKind::kAttention)
      phase[i] = one_split[t.op] ? 3 : 0;
    else if (stage_of(t.kind) == 2)  // combiners (ir/kinds.def)
      phase[i] = 2;
  }
  return phase;
}

}  // namespace mpk
