// The verifier's driver and its structure layer: ids resolve, enums are known, names
// are unique, regions lie inside their tensors, operators match their kind's
// signature, tasks match their operator, events are well formed. The graph and
// schedule layers live in verifier_graph.cc, operator signatures in verifier_ops.cc.
#include "ir/verifier.h"

#include <algorithm>
#include <unordered_set>
#include <variant>

#include "ir/verifier_rules.h"

namespace mpk {
namespace {

template <typename E>
bool enum_ok(E e, int count) {
  return static_cast<int>(e) >= 0 && static_cast<int>(e) < count;
}

bool attr_key_ok(const std::string& key) {
  if (key.empty()) return false;
  for (char c : key)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
          c == '.' || c == '-'))
      return false;
  return true;
}

class StructureChecker {
 public:
  explicit StructureChecker(const Module& m) : m_(m), p_(m.program) {}

  std::vector<Diagnostic> run() {
    attr_keys(m_.attrs, "module");
    tensors();
    if (!sink_.empty()) return sink_.finish();  // the rest multiplies tensor dimensions
    ops();
    tasks();
    coop_shares();
    events();
    schedule();
    return sink_.finish();
  }

 private:
  bool tensor_ok(TensorId t) const { return t >= 0 && static_cast<size_t>(t) < p_.tensors.size(); }
  bool task_ok(TaskId t) const { return t >= 0 && static_cast<size_t>(t) < m_.graph.tasks.size(); }

  void attr_keys(const Attrs& a, const std::string& owner) {
    for (const auto& [key, value] : a)
      if (!attr_key_ok(key))
        sink_.add("structure.attr-key", owner + " has attribute key '" + key +
                                            "': keys are non-empty and use only [A-Za-z0-9_.-]");
  }

  void tensors() {
    std::unordered_set<std::string_view> names;
    for (size_t i = 0; i < p_.tensors.size(); ++i) {
      const Tensor& t = p_.tensors[i];
      const std::string what = "tensor " + std::to_string(i) + " '" + t.name + "'";
      if (!names.insert(t.name).second)
        sink_.add("structure.duplicate-name", what + ": another tensor has the same name");
      if (!enum_ok(t.dtype, 4))
        sink_.add("structure.bad-enum", what + " has dtype value " + std::to_string(int(t.dtype)));
      if (!enum_ok(t.role, 6))
        sink_.add("structure.bad-enum", what + " has role value " + std::to_string(int(t.role)));
      bool positive = true;
      for (size_t d = 0; d < t.shape.size(); ++d)
        if (t.shape[d] <= 0) {
          positive = false;
          sink_.add("structure.bad-shape", what + " has dimension " + std::to_string(d) + " = " +
                                               std::to_string(t.shape[d]) + " (must be positive)");
        }
      if (positive && enum_ok(t.dtype, 4))  // saturates: never above kMaxStepBytes + 1 + kMaxTensorBytes
        step_bytes_ = std::min(step_bytes_ + tensor_bytes(t, what), kMaxStepBytes + 1);
    }
    if (step_bytes_ > kMaxStepBytes)
      sink_.add("structure.tensor-size", "the non-weight tensors hold more than " + std::to_string(kMaxStepBytes) +
                                             " bytes (2 TiB), the limit of one step's activations, caches and scratch");
  }

  // Checks that t's element count and bytes are in range; returns its bytes when t is
  // a non-weight tensor in range (counted in kMaxStepBytes), else 0.
  int64_t tensor_bytes(const Tensor& t, const std::string& what) {
    int64_t bytes = 0;
    try {
      bytes = t.num_bytes();
    } catch (const Error& e) {
      sink_.add("structure.tensor-size", what + " " + format_shape(t.shape) + ": " + e.what());
      return 0;
    }
    if (bytes > kMaxTensorBytes) {
      sink_.add("structure.tensor-size", what + " " + format_shape(t.shape) + " holds " + std::to_string(bytes) +
                                             " bytes, above the limit of " + std::to_string(kMaxTensorBytes) +
                                             " (1 TiB)");
      return 0;
    }
    return t.role == TensorRole::kWeight ? 0 : bytes;
  }

  void ops() {
    std::unordered_set<std::string_view> names;
    for (size_t i = 0; i < p_.ops.size(); ++i) {
      const Operator& op = p_.ops[i];
      const std::string what = "operator " + std::to_string(i) + " '" + op.name + "'";
      if (!names.insert(op.name).second)
        sink_.add("structure.duplicate-name", what + ": another operator has the same name");
      attr_keys(op.attrs, what);
      bool ok = enum_ok(op.kind, kNumOpKinds);
      if (!ok) sink_.add("structure.bad-enum", what + " has kind value " + std::to_string(int(op.kind)));
      for (const auto* list : {&op.inputs, &op.outputs})
        for (size_t j = 0; j < list->size(); ++j)
          if (!tensor_ok((*list)[j])) {
            ok = false;
            sink_.add("structure.unknown-tensor",
                      what + (list == &op.inputs ? " input " : " output ") + std::to_string(j) +
                          " refers to tensor " + std::to_string((*list)[j]) + ", but there are " +
                          std::to_string(p_.tensors.size()) + " tensors");
          }
      if (!ok) continue;
      bool shapes_ok = true;
      for (const auto* list : {&op.inputs, &op.outputs})
        for (TensorId t : *list)
          shapes_ok = shapes_ok && enum_ok(p_.tensors[t].dtype, 4);
      if (!shapes_ok) continue;
      const std::string problem = op_signature_problem(p_, op);
      if (!problem.empty()) sink_.add("structure.op-signature", what + " (" +
                                                                std::string(name_of(op.kind)) +
                                                                "): " + problem);
    }
  }

  // `what` names the access ("task 3 read 0"); built only when there is a problem.
  template <typename What>
  void region(const Region& r, const What& what) {
    if (!tensor_ok(r.tensor)) {
      sink_.add("structure.unknown-tensor", what() + " refers to tensor " + std::to_string(r.tensor) +
                                                ", but there are " +
                                                std::to_string(p_.tensors.size()) + " tensors");
      return;
    }
    const Tensor& t = p_.tensors[r.tensor];
    if (r.dims.size() != t.shape.size()) {
      sink_.add("structure.region-rank", what() + " " + format_region(t.name, r) + " has rank " +
                                             std::to_string(r.dims.size()) + ", tensor '" + t.name +
                                             "' has rank " + std::to_string(t.shape.size()));
      return;
    }
    for (size_t d = 0; d < r.dims.size(); ++d) {
      const Range& g = r.dims[d];
      if (g.lo < 0 || g.hi > t.shape[d] || g.lo > g.hi) {
        sink_.add("structure.region-out-of-bounds",
                  what() + " " + format_region(t.name, r) + ": dimension " + std::to_string(d) + " range " +
                      std::to_string(g.lo) + ":" + std::to_string(g.hi) + " is not inside 0:" +
                      std::to_string(t.shape[d]));
        return;
      }
    }
  }

  void tasks() {
    for (size_t i = 0; i < m_.graph.tasks.size(); ++i) {
      const Task& t = m_.graph.tasks[i];
      const std::string what = "task " + std::to_string(i);
      if (!t.attrs.empty()) attr_keys(t.attrs, what);
      const bool op_ok = t.op >= 0 && static_cast<size_t>(t.op) < p_.ops.size();
      if (!op_ok)
        sink_.add("structure.bad-id", what + " refers to operator " + std::to_string(t.op) +
                                          ", but there are " + std::to_string(p_.ops.size()) +
                                          " operators");
      if (!enum_ok(t.kind, kNumTaskKinds)) {
        sink_.add("structure.bad-enum", what + " has kind value " + std::to_string(int(t.kind)));
      } else if (op_ok && enum_ok(p_.ops[t.op].kind, kNumOpKinds) &&
                 !ops::owns_task(p_.ops[t.op], t.kind)) {
        sink_.add("structure.task-kind", what + " of kind " + std::string(name_of(t.kind)) +
                                             " belongs to operator '" + p_.ops[t.op].name +
                                             "' of kind " + std::string(name_of(p_.ops[t.op].kind)));
      }
      for (size_t j = 0; j < t.reads.size(); ++j)
        region(t.reads[j], [&] { return what + " read " + std::to_string(j); });
      for (size_t j = 0; j < t.writes.size(); ++j)
        region(t.writes[j], [&] { return what + " write " + std::to_string(j); });
    }
  }

  void task_list(const std::vector<TaskId>& ids, const std::string& what) {
    bool sorted = true;
    for (size_t j = 0; j < ids.size(); ++j) {
      if (!task_ok(ids[j]))
        sink_.add("structure.bad-id", what + " refers to task " + std::to_string(ids[j]) +
                                          ", but there are " +
                                          std::to_string(m_.graph.tasks.size()) + " tasks");
      if (j > 0 && ids[j] <= ids[j - 1]) sorted = false;
    }
    if (!sorted) sink_.add("structure.event-list", what + "s are not sorted and unique");
  }

  // Cooperative shares (docs/ir.md): integer attrs in range, linear or lm_head tasks,
  // and an operator's shares exactly 0..shares-1 of one count and unit.
  void coop_shares() {
    std::vector<std::vector<TaskId>> of_op(p_.ops.size());
    std::vector<char> plain(p_.ops.size(), 0);  // the operator has an ordinary linear or lm_head task
    for (size_t i = 0; i < m_.graph.tasks.size(); ++i) {
      const Task& t = m_.graph.tasks[i];
      if (!t.attrs.count("shares") && !t.attrs.count("share") && !t.attrs.count("unit_rows")) {
        if ((t.kind == TaskKind::kLinear || t.kind == TaskKind::kLmHead) && t.op >= 0 &&
            static_cast<size_t>(t.op) < p_.ops.size())
          plain[t.op] = 1;
        continue;
      }
      const std::string what = "task " + std::to_string(i);
      for (const char* key : {"share", "shares", "unit_rows"})
        if (!t.attrs.count(key) || !std::holds_alternative<int64_t>(t.attrs.at(key))) {
          sink_.add("structure.coop-share", what + ": a cooperative share needs integer attrs share, shares and unit_rows");
          return;
        }
      const CoopShare c = coop_share(t);
      if (t.kind != TaskKind::kLinear && t.kind != TaskKind::kLmHead)
        sink_.add("structure.coop-share", what + ": only linear and lm_head tasks can be cooperative shares");
      else if (c.shares < 1 || c.shares > (int64_t{1} << 20) || c.share < 0 || c.share >= c.shares)
        sink_.add("structure.coop-share", what + ": share " + std::to_string(c.share) + " of " +
                                              std::to_string(c.shares) + " is out of range");
      else if (c.unit_rows < 8 || c.unit_rows % 8 != 0 || c.unit_rows > (int64_t{1} << 20))
        sink_.add("structure.coop-share", what + ": unit_rows " + std::to_string(c.unit_rows) +
                                              " is not a positive multiple of 8");
      else if (t.op >= 0 && static_cast<size_t>(t.op) < p_.ops.size())
        of_op[t.op].push_back(static_cast<TaskId>(i));
    }
    for (size_t o = 0; o < of_op.size(); ++o) {
      if (of_op[o].empty()) continue;
      const CoopShare first = coop_share(m_.graph.tasks[of_op[o][0]]);
      std::vector<char> seen(static_cast<size_t>(first.shares), 0);
      bool ok = static_cast<int64_t>(of_op[o].size()) == first.shares;
      for (TaskId t : of_op[o]) {
        const CoopShare c = coop_share(m_.graph.tasks[t]);
        ok = ok && c.shares == first.shares && c.unit_rows == first.unit_rows && !seen[c.share]++;
      }
      ok = ok && !plain[o];
      if (!ok)
        sink_.add("structure.coop-share", "operator '" + p_.ops[o].name + "': its cooperative shares must be " +
                                              "exactly 0.." + std::to_string(first.shares - 1) +
                                              ", of one count and unit_rows, and all its tasks of their kind");
    }
  }

  void events() {
    for (size_t i = 0; i < m_.graph.events.size(); ++i) {
      const Event& e = m_.graph.events[i];
      const std::string what = "event " + std::to_string(i);
      task_list(e.producers, what + " producer");
      task_list(e.consumers, what + " consumer");
      if (e.producers.empty()) sink_.add("structure.event-list", what + " has no producers");
      if (e.consumers.empty()) sink_.add("structure.event-list", what + " has no consumers");
      if (e.target != static_cast<int64_t>(e.producers.size()))
        sink_.add("structure.event-target", what + " has target " + std::to_string(e.target) +
                                                " but " + std::to_string(e.producers.size()) +
                                                " producers");
      if (e.step_distance != 0 && e.step_distance != 1)
        sink_.add("structure.event-distance", what + " has step_distance " +
                                                  std::to_string(e.step_distance) +
                                                  " (must be 0 or 1)");
    }
  }

  void schedule() {
    const Schedule& s = m_.graph.schedule;
    attr_keys(s.params, "schedule");
    for (size_t w = 0; w < s.workers.size(); ++w)
      for (TaskId t : s.workers[w])
        if (!task_ok(t))
          sink_.add("structure.bad-id", "worker " + std::to_string(w) + " lists task " +
                                            std::to_string(t) + ", but there are " +
                                            std::to_string(m_.graph.tasks.size()) + " tasks");
  }

  const Module& m_;
  const Program& p_;
  DiagnosticSink sink_;
  int64_t step_bytes_ = 0;  // bytes of the non-weight tensors, saturated at kMaxStepBytes + 1
};

}  // namespace

void DiagnosticSink::add(const std::string& rule, const std::string& message) {
  auto it = std::find_if(counts_.begin(), counts_.end(), [&](const auto& c) { return c.first == rule; });
  if (it == counts_.end()) {
    counts_.emplace_back(rule, 0);
    it = counts_.end() - 1;
  }
  if (++it->second <= kMaxPerRule) out_.push_back({rule, message});
}

std::vector<Diagnostic> DiagnosticSink::finish() {
  for (const auto& [rule, n] : counts_)
    if (n > kMaxPerRule)
      out_.push_back({rule, std::to_string(n - kMaxPerRule) + " more diagnostics of this rule"});
  counts_.clear();
  return std::move(out_);
}

std::string describe_task(const Module& m, TaskId t) {
  const Task& task = m.graph.tasks.at(t);
  const bool op_ok = task.op >= 0 && static_cast<size_t>(task.op) < m.program.ops.size();
  const bool kind_ok = enum_ok(task.kind, kNumTaskKinds);
  return "task " + std::to_string(t) + " (" + (op_ok ? m.program.ops[task.op].name : "?") + ":" +
         (kind_ok ? std::string(name_of(task.kind)) : "?") + ")";
}

std::vector<Diagnostic> verify_structure(const Module& m) {
  std::vector<Diagnostic> d = StructureChecker(m).run();
  if (!d.empty()) return d;
  DiagnosticSink sink;
  check_roles(m, sink);
  check_module_attrs(m, sink);
  check_tensor_parallel(m, sink);
  if (!sink.empty() || m.graph.tasks.empty()) return sink.finish();
  const std::vector<OpScratch> scratch = check_task_forms(m, sink);
  if (sink.empty()) check_coverage(m, scratch, sink);
  return sink.finish();
}

std::vector<Diagnostic> verify_module(const Module& m) {
  std::vector<Diagnostic> d = verify_structure(m);
  if (!d.empty()) return d;
  const TaskGraphIndex g(m.graph);
  d = verify_graph_indexed(m, g);
  if (!d.empty()) return d;
  return verify_schedule_indexed(m, g);
}

void verify_or_throw(const Module& m) {
  const std::vector<Diagnostic> d = verify_module(m);
  if (d.empty()) return;
  constexpr size_t kShown = 3;
  std::string msg = "verifier: ";
  for (size_t i = 0; i < d.size() && i < kShown; ++i) {
    if (i) msg += "; ";
    msg += d[i].rule + ": " + d[i].message;
  }
  if (d.size() > kShown) msg += " (and " + std::to_string(d.size() - kShown) + " more)";
  throw Error(msg);
}

}  // namespace mpk
