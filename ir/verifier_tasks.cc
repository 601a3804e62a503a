// structure.task-order, structure.task-regions and structure.task-cost (ir/verifier_rules.h).
// Every backend derives what a task computes from a few of its regions (the columns,
// head or slot it writes) and trusts the rest, so each task's regions must be exactly
// those docs/ir.md ("Tasks") gives its kind for those parameters: all batch rows, the
// reads that match its writes, query heads of one kv head per attention task, the balanced position
// split of its slot (each family states its kinds' regions: ir/ops/<family>.cc). Tasks
// come in program order, so that task id order is the sequential order the graph layer
// checks events against.
#include <algorithm>

#include "ir/verifier_rules.h"

namespace mpk {
namespace {

bool region_less(const Region& a, const Region& b) {
  if (a.tensor != b.tensor) return a.tensor < b.tensor;
  return std::lexicographical_compare(a.dims.begin(), a.dims.end(), b.dims.begin(), b.dims.end(),
                                      [](const Range& x, const Range& y) {
                                        return x.lo != y.lo ? x.lo < y.lo : x.hi < y.hi;
                                      });
}

// Reads as a set (reading a region twice is reading it once); writes as a multiset
// (writing one twice is a coverage error, reported there).
struct Form {
  std::vector<Region> reads, writes;
  void normalize() {
    std::sort(reads.begin(), reads.end(), region_less);
    reads.erase(std::unique(reads.begin(), reads.end()), reads.end());
    std::sort(writes.begin(), writes.end(), region_less);
  }
};

class FormChecker {
 public:
  FormChecker(const Module& m, DiagnosticSink& sink)
      : m_(m), p_(m.program), sink_(sink), scratch_(m.program.ops.size()) {}

  std::vector<OpScratch> run() {
    order();
    scratch();
    if (!sink_.empty()) return scratch_;
    for (size_t i = 0; i < m_.graph.tasks.size(); ++i) {
      form(static_cast<TaskId>(i));
      cost(static_cast<TaskId>(i));
    }
    return scratch_;
  }

 private:
  // ---- order ----
  void order() {
    const auto& tasks = m_.graph.tasks;
    std::vector<char> has_task(p_.ops.size(), 0), attention(p_.ops.size(), 0), split(p_.ops.size(), 0);
    const std::vector<int> phase = task_phases(m_);
    for (size_t i = 0; i < tasks.size(); ++i) {
      const Task& t = tasks[i];
      has_task[t.op] = 1;
      attention[t.op] |= t.kind == TaskKind::kAttention;
      split[t.op] |= t.kind == TaskKind::kAttentionPartial || t.kind == TaskKind::kAttentionMerge;
      if (i == 0) continue;
      const Task& prev = tasks[i - 1];
      auto head = [&] {
        return describe_task(m_, static_cast<TaskId>(i)) + " comes after " +
               describe_task(m_, static_cast<TaskId>(i - 1));
      };
      if (t.op < prev.op)
        sink_.add("structure.task-order", head() + ", whose operator is later in program order: tasks follow "
                                                   "program order");
      else if (t.op == prev.op && phase[i] < phase[i - 1])
        sink_.add("structure.task-order", head() + ": an operator's attention_merge and argmax_reduce tasks "
                                                   "come last, its kv_append tasks before its attention "
                                                   "partials or after its attention tasks");
    }
    for (size_t o = 0; o < p_.ops.size(); ++o)
      if (!has_task[o])
        sink_.add("structure.coverage", "operator '" + p_.ops[o].name +
                                            "' has no tasks: an operator's tasks write all of its outputs");
    for (size_t o = 0; o < p_.ops.size(); ++o)
      if (attention[o] && split[o])
        sink_.add("structure.task-regions", "operator '" + p_.ops[o].name +
                                                "' has both attention tasks (one split) and attention_partial "
                                                "or attention_merge tasks (several splits)");
  }

  // ---- scratch: which operator owns each scratch tensor, and its shape ----
  // The operator whose tasks write it, else the one whose tasks read it (structure.coverage
  // then finds it unwritten); a scratch tensor belongs to one operator.
  void scratch() {
    std::vector<OpId> owner(p_.tensors.size(), -1);
    const auto& tasks = m_.graph.tasks;
    for (const bool writes : {true, false})
      for (size_t i = 0; i < tasks.size(); ++i)
        for (const Region& r : writes ? tasks[i].writes : tasks[i].reads)
          if (p_.tensors[r.tensor].role == TensorRole::kScratch && (writes || owner[r.tensor] < 0))
            own(owner, r.tensor, static_cast<TaskId>(i), writes);
    for (size_t i = 0; i < tasks.size(); ++i)
      for (const Region& r : tasks[i].reads)
        if (p_.tensors[r.tensor].role == TensorRole::kScratch && owner[r.tensor] != tasks[i].op)
          sink_.add("structure.role", describe_task(m_, static_cast<TaskId>(i)) + " reads scratch tensor '" +
                                          p_.tensors[r.tensor].name + "', which belongs to operator '" +
                                          p_.ops[owner[r.tensor]].name + "'");
    for (size_t o = 0; o < p_.ops.size(); ++o) scratch_shapes(static_cast<OpId>(o));
  }

  void own(std::vector<OpId>& owner, TensorId t, TaskId task, bool writes) {
    const OpId o = m_.graph.tasks[task].op;
    const Tensor& tt = p_.tensors[t];
    if (owner[t] >= 0 && owner[t] != o) {
      if (writes)
        sink_.add("structure.role", "scratch tensor '" + tt.name + "' is written by tasks of operators '" +
                                        p_.ops[owner[t]].name + "' and '" + p_.ops[o].name +
                                        "': a scratch tensor belongs to one operator");
      return;
    }
    owner[t] = o;
    const Operator& op = p_.ops[o];
    if (op.kind != OpKind::kAttention && op.kind != OpKind::kArgmax && linear_form(op).tokens < 0) {
      sink_.add("structure.task-regions", describe_task(m_, task) + " uses scratch tensor '" + tt.name + "', but a " +
                                              std::string(name_of(op.kind)) + " operator has none (only an "
                                              "attention in splits and an argmax do)");
      return;
    }
    OpScratch& s = scratch_[o];
    TensorId& slot = op.kind == OpKind::kAttention ? s.part : tt.dtype == DType::kI32 ? s.idx : s.val;
    if (slot >= 0 && slot != t)
      sink_.add("structure.task-regions", "operator '" + p_.ops[o].name + "' has tasks that use scratch '" +
                                              p_.tensors[slot].name + "' and '" + tt.name +
                                              "' for one purpose: it has at most one attention partial tensor, "
                                              "or one pair of argmax partial tensors");
    slot = t;
  }

  void scratch_shapes(OpId o) {
    const OpScratch& s = scratch_[o];
    const std::string who = "operator '" + p_.ops[o].name + "'";
    if ((s.val >= 0) != (s.idx >= 0)) {
      sink_.add("structure.task-regions", who + " writes one argmax partial tensor without the other (f32 values, "
                                                "i32 indices)");
    } else if (s.val >= 0) {
      const Tensor &v = p_.tensors[s.val], &i = p_.tensors[s.idx];
      if (v.dtype != DType::kF32 || v.shape.size() != 2 || i.dtype != DType::kI32 || i.shape != v.shape)
        sink_.add("structure.task-regions", who + "'s argmax partials '" + v.name + "' " + format_shape(v.shape) +
                                                " and '" + i.name + "' " + format_shape(i.shape) +
                                                " must be f32 and i32 [B, P]");
    }
    if (s.part < 0) return;
    const Tensor& part = p_.tensors[s.part];
    const Operator& op = p_.ops[o];
    const int64_t hd = attr_int(op.attrs, "head_dim"), nq = attr_int(op.attrs, "num_q_heads");
    const int64_t seq = p_.tensors[attention_form(op).k_cache].shape[1];
    const auto& ps = part.shape;
    if (part.dtype != DType::kF32 || ps.size() != 4 || ps[1] != nq || ps[2] > seq || ps[3] != hd + 2)
      sink_.add("structure.task-regions", who + "'s attention partials '" + part.name + "' " + format_shape(ps) +
                                              " must be f32 [B, num_q_heads " + std::to_string(nq) +
                                              ", splits <= max_seq_len " + std::to_string(seq) + ", head_dim + 2 " +
                                              std::to_string(hd + 2) + "]");
  }

  // At most kShown regions, so that a task with a million of them gets a short message.
  std::string regions_text(const std::vector<Region>& rs) const {
    constexpr size_t kShown = 8;
    std::string s;
    for (size_t i = 0; i < rs.size() && i < kShown; ++i)
      s += (i ? ", " : "") + format_region(p_.tensors[rs[i].tensor].name, rs[i]);
    if (rs.size() > kShown) s += ", ... (" + std::to_string(rs.size()) + " regions)";
    return s;
  }

  void form(TaskId id) {
    const Task& task = m_.graph.tasks[id];
    for (const auto* list : {&task.reads, &task.writes})
      for (const Region& r : *list)
        if (r.empty()) {
          sink_.add("structure.task-regions", describe_task(m_, id) + " has an empty region " +
                                                  format_region(p_.tensors[r.tensor].name, r));
          return;
        }
    Form want;
    try {
      const ops::TaskRegions r = ops::task_regions(ops::TaskRegionRules(p_, scratch_[task.op]), task);
      want = Form{r.reads, r.writes};
    } catch (const Error& e) {
      sink_.add("structure.task-regions", describe_task(m_, id) + " " + e.what() + " (docs/ir.md, \"Tasks\")");
      return;
    }
    Form got{task.reads, task.writes}, canonical = want;
    got.normalize();
    canonical.normalize();
    if (got.reads == canonical.reads && got.writes == canonical.writes) return;
    sink_.add("structure.task-regions", describe_task(m_, id) + " has reads(" + regions_text(task.reads) +
                                            ") writes(" + regions_text(task.writes) + "), but its kind's regions "
                                            "(docs/ir.md, \"Tasks\") for what it writes are reads(" +
                                            regions_text(want.reads) + ") writes(" + regions_text(want.writes) + ")");
  }

  void cost(TaskId id) {
    const Task& t = m_.graph.tasks[id];
    if (t.bytes < 0 || t.bytes > kMaxTaskBytes)
      sink_.add("structure.task-cost", describe_task(m_, id) + " bytes must be in 0.." +
                                           std::to_string(kMaxTaskBytes) + ", got " + std::to_string(t.bytes));
    if (t.flops < 0 || t.flops > kMaxTaskFlops)
      sink_.add("structure.task-cost", describe_task(m_, id) + " flops must be in 0.." +
                                           std::to_string(kMaxTaskFlops) + ", got " + std::to_string(t.flops));
  }

  const Module& m_;
  const Program& p_;
  DiagnosticSink& sink_;
  std::vector<OpScratch> scratch_;
};

}  // namespace

std::vector<OpScratch> check_task_forms(const Module& m, DiagnosticSink& sink) { return FormChecker(m, sink).run(); }

}  // namespace mpk
