// Prints a Module in the canonical text form (grammar in docs/ir.md, "Text form").
// The printer never fails: an id or enum value out of range (a module the verifier
// would reject) prints as "?<number>", which the parser refuses.
#include <cstddef>

#include "ir/serialize.h"
#include "ir/text.h"

namespace mpk {
namespace {

bool is_bare_name(std::string_view s) {
  if (s.empty()) return false;
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (!alpha(s[0])) return false;
  for (char c : s)
    if (!alpha(c) && !(c >= '0' && c <= '9') && c != '.') return false;
  return true;
}

template <typename E>
std::string enum_name(E e, int count) {
  const int v = static_cast<int>(e);
  if (v < 0 || v >= count) return "?" + std::to_string(v);
  return std::string(name_of(e));
}

class Printer {
 public:
  Printer(const Module& m, const PrintOptions& opts) : m_(m), opts_(opts) {}

  std::string run() {
    line("mpk.module " + format_attr_value(m_.name) + " ir_version=" + std::to_string(kIrVersion));
    line("attrs " + format_attrs(m_.attrs));
    line("provenance source=" + format_attr_value(m_.provenance.source) +
         " pipeline=" + format_attr_value(m_.provenance.pipeline) +
         (opts_.tool_version ? " tool=" + format_attr_value(m_.provenance.tool_version) : ""));
    machine_line();
    for (const Tensor& t : m_.program.tensors) tensor(t);
    for (const Operator& op : m_.program.ops) op_line(op);
    for (size_t i = 0; i < m_.graph.tasks.size(); ++i) task(i, m_.graph.tasks[i]);
    for (size_t i = 0; i < m_.graph.events.size(); ++i) event(i, m_.graph.events[i]);
    const Schedule& s = m_.graph.schedule;
    if (!s.policy.empty() || !s.params.empty() || !s.workers.empty()) {
      line("schedule " + format_attr_value(s.policy) + " " + format_attrs(s.params));
      for (size_t w = 0; w < s.workers.size(); ++w) {
        std::string l = "worker " + std::to_string(w) + ":";
        for (TaskId t : s.workers[w]) l += " " + std::to_string(t);
        line(l);
      }
    }
    return std::move(out_);
  }

 private:
  void line(const std::string& s) {
    out_ += s;
    out_ += '\n';
  }

  // The machine line, every field unless opts_ leaves out those at their defaults.
  void machine_line() {
    const MachineModel& mm = m_.machine;
    const MachineModel defaults;
    std::string s = "machine";
    auto field = [&](const char* key, const auto& value, const auto& default_value, const std::string& text) {
      if (opts_.machine_defaults || value != default_value) s += std::string(" ") + key + "=" + text;
    };
    field("name", mm.name, defaults.name, format_attr_value(mm.name));
    field("sm_count", mm.sm_count, defaults.sm_count, std::to_string(mm.sm_count));
    field("smem_per_sm", mm.smem_per_sm, defaults.smem_per_sm, std::to_string(mm.smem_per_sm));
    field("mem_bandwidth", mm.mem_bandwidth, defaults.mem_bandwidth, format_attr_value(mm.mem_bandwidth));
    field("clock_ghz", mm.clock_ghz, defaults.clock_ghz, format_attr_value(mm.clock_ghz));
    field("event_latency_ns", mm.event_latency_ns, defaults.event_latency_ns, format_attr_value(mm.event_latency_ns));
    field("task_overhead_ns", mm.task_overhead_ns, defaults.task_overhead_ns, format_attr_value(mm.task_overhead_ns));
    if (s != "machine") line(s);
  }

  std::string tensor_name(TensorId id) const {
    if (id < 0 || static_cast<size_t>(id) >= m_.program.tensors.size())
      return "?" + std::to_string(id);
    return format_name(m_.program.tensors[id].name);
  }

  std::string op_name(OpId id) const {
    if (id < 0 || static_cast<size_t>(id) >= m_.program.ops.size()) return "?" + std::to_string(id);
    return format_name(m_.program.ops[id].name);
  }

  std::string regions(const std::vector<Region>& rs) const {
    std::string s = "(";
    for (size_t i = 0; i < rs.size(); ++i) {
      if (i) s += ", ";
      s += format_region(tensor_name(rs[i].tensor), rs[i]);
    }
    return s + ")";
  }

  std::string tensor_list(const std::vector<TensorId>& ids) const {
    std::string s = "(";
    for (size_t i = 0; i < ids.size(); ++i) {
      if (i) s += ", ";
      s += tensor_name(ids[i]);
    }
    return s + ")";
  }

  static std::string id_list(const std::vector<TaskId>& ids) {
    std::string s = "(";
    for (size_t i = 0; i < ids.size(); ++i) {
      if (i) s += ", ";
      s += std::to_string(ids[i]);
    }
    return s + ")";
  }

  void tensor(const Tensor& t) {
    std::string s = "tensor " + format_name(t.name) + " : " + enum_name(t.dtype, 4) + "[";
    for (size_t i = 0; i < t.shape.size(); ++i) {
      if (i) s += ", ";
      s += std::to_string(t.shape[i]);
    }
    line(s + "] " + enum_name(t.role, 6));
  }

  void op_line(const Operator& op) {
    line("op " + format_name(op.name) + " = " + enum_name(op.kind, kNumOpKinds) +
         tensor_list(op.inputs) + " -> " + tensor_list(op.outputs) +
         " layer=" + std::to_string(op.layer) + " " + format_attrs(op.attrs));
  }

  void task(size_t id, const Task& t) {
    line("task " + std::to_string(id) + " = " + op_name(t.op) + ":" +
         enum_name(t.kind, kNumTaskKinds) + " reads" + regions(t.reads) + " writes" +
         regions(t.writes) + " bytes=" + std::to_string(t.bytes) +
         " flops=" + std::to_string(t.flops) + " " + format_attrs(t.attrs));
  }

  void event(size_t id, const Event& e) {
    line("event " + std::to_string(id) + " target=" + std::to_string(e.target) +
         " distance=" + std::to_string(e.step_distance) + (e.all_ranks ? " all_ranks" : "") +
         " producers" + id_list(e.producers) +
         " consumers" + id_list(e.consumers));
  }

  const Module& m_;
  const PrintOptions& opts_;
  std::string out_;
};

}  // namespace

std::string format_name(std::string_view name) {
  if (is_bare_name(name)) return std::string(name);
  return format_attr_value(std::string(name));
}

std::string print_module(const Module& m, const PrintOptions& options) { return Printer(m, options).run(); }

}  // namespace mpk
