// structure.task-order, structure.task-regions and structure.task-cost (ir/verifier_rules.h).
// Every backend derives what a task computes from a few of its regions (the columns,
// head or slot it writes) and trusts the rest, so each task's regions must be exactly
// those docs/ir.md ("Tasks") gives its kind for those parameters: all batch rows, the
// reads that match its writes, query heads of one kv head per attention task, the balanced position
// split of its slot. Tasks come in program order, so that task id order is the
// sequential order the graph layer checks events against.
#include <algorithm>

#include "ir/checked.h"
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

  // ---- forms ----
  const std::vector<int64_t>& shape(TensorId t) const { return p_.tensors[t].shape; }
  Range all(TensorId t, size_t d = 0) const { return {0, shape(t)[d]}; }
  static Region reg(TensorId t, std::vector<Range> dims) { return Region{t, std::move(dims)}; }

  [[noreturn]] static void bad(const std::string& what) { throw Error(what); }
  // The task's first write on tensor t: the parameters of its form are read from it.
  const Region& key(const Task& task, TensorId t, const char* role) const {
    for (const Region& r : task.writes)
      if (r.tensor == t) return r;
    bad(std::string("writes no region of its ") + role + " '" + p_.tensors[t].name + "'");
  }
  static bool writes_on(const Task& task, TensorId t) {
    return std::any_of(task.writes.begin(), task.writes.end(), [&](const Region& r) { return r.tensor == t; });
  }
  TensorId need(TensorId t, const char* what) const {
    if (t < 0) bad(std::string("writes no ") + what + " scratch tensor");
    return t;
  }
  // The query columns of kv head h's group, from a write on y (whole group).
  int64_t head_of(const Range& c, int64_t width, const std::string& region) const {
    if (c.lo % width != 0 || c.size() != width)
      bad("writes " + region + ": not the " + std::to_string(width) + " columns of one kv head's query heads");
    return c.lo / width;
  }

  Form expected(const Task& task, const OpScratch& sc) const {
    const Operator& op = p_.ops[task.op];
    const auto& in = op.inputs;
    const auto& out = op.outputs;
    Form f;
    switch (task.kind) {
      case TaskKind::kEmbedding: {
        const Range c = key(task, out[0], "output").dims[1];
        f.reads = {reg(in[0], {all(in[0]), c}), reg(in[1], {all(in[1])})};
        f.writes = {reg(out[0], {all(out[0]), c})};
        break;
      }
      case TaskKind::kRmsNorm:
        f.reads = {full_region(in[0], shape(in[0])), full_region(in[1], shape(in[1]))};
        f.writes = {full_region(out[0], shape(out[0]))};
        break;
      case TaskKind::kLinear:
      case TaskKind::kLmHead:
        linear(task, sc, f);
        break;
      case TaskKind::kQkNorm:
      case TaskKind::kRope: {
        const int64_t hd = attr_int(op.attrs, "head_dim");
        const Region& w = key(task, out[0], "output");
        const Range c = w.dims[1];
        if (c.lo % hd != 0 || c.hi % hd != 0)
          bad("writes " + format_region(p_.tensors[out[0]].name, w) + ": not whole heads of " + std::to_string(hd));
        f.reads = {reg(in[0], {all(in[0]), c})};
        if (task.kind == TaskKind::kQkNorm) f.reads.push_back(reg(in[1], {{0, hd}}));
        f.writes = {reg(out[0], {all(out[0]), c})};
        break;
      }
      case TaskKind::kKvAppend:
        kv_append(task, f);
        break;
      case TaskKind::kAttention:
      case TaskKind::kAttentionPartial:
      case TaskKind::kAttentionMerge:
        attention(task, sc, f);
        break;
      case TaskKind::kSiluMul:
      case TaskKind::kResidualAdd: {
        const Range c = key(task, out[0], "output").dims[1];
        f.reads = {reg(in[0], {all(in[0]), c}), reg(in[1], {all(in[1]), c})};
        f.writes = {reg(out[0], {all(out[0]), c})};
        break;
      }
      case TaskKind::kArgmaxPartial: {
        const TensorId val = need(sc.val, "argmax partial"), logits = in[0];
        const int64_t p = key(task, val, "argmax partial").dims[1].lo;
        const Region* r = nullptr;
        for (const Region& x : task.reads)
          if (x.tensor == logits && !r) r = &x;
        if (!r) bad("reads no region of its logits '" + p_.tensors[logits].name + "'");
        f.reads = {reg(logits, {all(logits), r->dims[1]})};
        f.writes = {reg(val, {all(val), {p, p + 1}}), reg(sc.idx, {all(sc.idx), {p, p + 1}})};
        break;
      }
      case TaskKind::kArgmaxReduce: {
        const TensorId val = need(sc.val, "argmax partial");
        const TensorId tokens = op.kind == OpKind::kArgmax ? out[0] : linear_form(op).tokens;
        f.reads = {full_region(val, shape(val)), full_region(sc.idx, shape(sc.idx))};
        f.writes = {full_region(tokens, shape(tokens))};
        break;
      }
    }
    return f;
  }

  // Tiles: x whole, the W rows (and up rows) of its output columns, the residual's
  // columns, the norm weight whole; a cooperative share declares the whole output. With
  // an argmax, also its partial slot (a share's slot is its share).
  void linear(const Task& task, const OpScratch& sc, Form& f) const {
    const LinearForm lf = linear_form(p_.ops[task.op]);
    const CoopShare coop = coop_share(task);
    const int64_t k = shape(lf.x)[1];
    const Range n = coop.cooperative() ? all(lf.weight) : key(task, lf.y, "output").dims[1];
    f.reads = {reg(lf.x, {all(lf.x), {0, k}}), reg(lf.weight, {n, {0, k}})};
    if (lf.up >= 0) f.reads.push_back(reg(lf.up, {n, {0, k}}));
    if (lf.residual >= 0) f.reads.push_back(reg(lf.residual, {all(lf.residual), n}));
    if (lf.norm >= 0) f.reads.push_back(reg(lf.norm, {{0, k}}));
    f.writes = {reg(lf.y, {all(lf.y), n})};
    if (lf.tokens < 0) return;
    const TensorId val = need(sc.val, "argmax partial");
    const int64_t p = coop.cooperative() ? coop.share : key(task, val, "argmax partial").dims[1].lo;
    f.writes.push_back(reg(val, {all(val), {p, p + 1}}));
    f.writes.push_back(reg(sc.idx, {all(sc.idx), {p, p + 1}}));
  }

  // One kv head h: k and v columns (and the k norm weight of a fused, normed
  // attention) -> that head of both caches, all positions.
  void kv_append(const Task& task, Form& f) const {
    const Operator& op = p_.ops[task.op];
    const AttentionForm af = attention_form(op);
    const bool fused = op.kind == OpKind::kAttention;
    const TensorId k = fused ? af.k : op.inputs[0], v = fused ? af.v : op.inputs[1];
    const TensorId kc = fused ? af.k_cache : op.outputs[0], vc = fused ? af.v_cache : op.outputs[1];
    const int64_t hd = shape(kc)[3], h = key(task, kc, "cache").dims[2].lo;
    const Range cols{h * hd, (h + 1) * hd};
    f.reads = {reg(k, {all(k), cols}), reg(v, {all(v), cols})};
    if (fused && af.k_norm >= 0) f.reads.push_back(reg(af.k_norm, {{0, hd}}));
    f.writes = {reg(kc, {all(kc), all(kc, 1), {h, h + 1}, {0, hd}}),
                reg(vc, {all(vc), all(vc, 1), {h, h + 1}, {0, hd}})};
  }

  // kv head h (of G query heads): attention (one split), attention_partial (split i of
  // the balanced splits [i*S/splits, (i+1)*S/splits)) or attention_merge.
  void attention(const Task& task, const OpScratch& sc, Form& f) const {
    const Operator& op = p_.ops[task.op];
    const AttentionForm af = attention_form(op);
    const int64_t hd = attr_int(op.attrs, "head_dim");
    const int64_t g = attr_int(op.attrs, "num_q_heads") / attr_int(op.attrs, "num_kv_heads");
    const int64_t seq = shape(af.k_cache)[1];
    auto cache = [&](TensorId t, int64_t h, int64_t s0, int64_t s1) {
      return reg(t, {all(t), {s0, s1}, {h, h + 1}, {0, hd}});
    };
    auto q_cols = [&](int64_t h) { return Range{h * g * hd, (h + 1) * g * hd}; };
    if (task.kind == TaskKind::kAttentionPartial) {
      const TensorId part = need(sc.part, "attention partial");
      const Region& w = key(task, part, "attention partial");
      const int64_t h = head_of(w.dims[1], g, format_region(p_.tensors[part].name, w));
      const int64_t i = w.dims[2].lo, splits = shape(part)[2];
      const int64_t s0 = checked_mul(i, seq, "split start") / splits;
      const int64_t s1 = checked_mul(i + 1, seq, "split end") / splits;
      f.reads = {reg(af.q, {all(af.q), q_cols(h)})};
      if (af.fused() && af.q_norm >= 0) f.reads.push_back(reg(af.q_norm, {{0, hd}}));
      f.reads.push_back(cache(af.k_cache, h, s0, s1));
      f.reads.push_back(cache(af.v_cache, h, s0, s1));
      f.writes = {reg(part, {all(part), {h * g, (h + 1) * g}, {i, i + 1}, {0, hd + 2}})};
      return;
    }
    const Region& w = key(task, af.y, "output");
    if (task.kind == TaskKind::kAttentionMerge) {
      const int64_t h = head_of(w.dims[1], g * hd, format_region(p_.tensors[af.y].name, w));
      f.writes = {reg(af.y, {all(af.y), q_cols(h)})};
      const TensorId part = need(sc.part, "attention partial");
      f.reads = {reg(part, {all(part), {h * g, (h + 1) * g}, all(part, 2), {0, hd + 2}})};
      return;
    }
    // One split: whole query heads of one kv head h; a fused task that writes the caches
    // appends kv head h itself.
    const Range c = w.dims[1];
    if (c.lo % hd != 0 || c.hi % hd != 0 || c.empty() || c.lo / (g * hd) != (c.hi - 1) / (g * hd))
      bad("writes " + format_region(p_.tensors[af.y].name, w) + ": not whole query heads of one kv head");
    const int64_t h = c.lo / (g * hd);
    f.writes = {reg(af.y, {all(af.y), c})};
    f.reads = {reg(af.q, {all(af.q), c})};
    if (af.fused()) {
      const Range k_cols{h * hd, (h + 1) * hd};
      f.reads.push_back(reg(af.k, {all(af.k), k_cols}));
      f.reads.push_back(reg(af.v, {all(af.v), k_cols}));
      if (af.q_norm >= 0) f.reads.insert(f.reads.end(), {reg(af.q_norm, {{0, hd}}), reg(af.k_norm, {{0, hd}})});
      if (writes_on(task, af.k_cache)) {
        f.writes.push_back(cache(af.k_cache, h, 0, seq));
        f.writes.push_back(cache(af.v_cache, h, 0, seq));
      }
    }
    f.reads.push_back(cache(af.k_cache, h, 0, seq));
    f.reads.push_back(cache(af.v_cache, h, 0, seq));
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
      want = expected(task, scratch_[task.op]);
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
