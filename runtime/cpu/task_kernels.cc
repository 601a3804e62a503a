// Per-task kernels: resolution and checking of a task's regions, and execution.
#include "runtime/cpu/task_kernels.h"

#include <algorithm>

#include "ir/error.h"
#include "ir/rope.h"
#include "ir/verifier.h"
#include "runtime/cpu/reference.h"

namespace mpk {
namespace {

std::string region_str(const Program& p, const Region& r) {
  return format_region(p.tensors[r.tensor].name, r);
}

Region box(TensorId t, std::vector<Range> dims) { return Region{t, std::move(dims)}; }

class TaskResolver {
 public:
  TaskResolver(const Module& m, TaskId id)
      : m_(m), p_(m.program), id_(id), task_(m.graph.tasks[id]), op_(p_.ops[task_.op]) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw Error(describe_task(m_, id_) + ": " + what);
  }

  void check_regions() const {
    auto check = [&](const Region& r, const char* what) {
      if (r.tensor < 0 || r.tensor >= static_cast<TensorId>(p_.tensors.size()))
        fail(std::string(what) + " region on tensor id " + std::to_string(r.tensor) + ", which does not exist");
      const Tensor& t = p_.tensors[r.tensor];
      if (r.dims.size() != t.shape.size())
        fail(std::string(what) + " region " + region_str(p_, r) + " has the wrong rank");
      for (size_t d = 0; d < r.dims.size(); ++d)
        if (r.dims[d].lo < 0 || r.dims[d].hi < r.dims[d].lo || r.dims[d].hi > t.shape[d])
          fail(std::string(what) + " region " + region_str(p_, r) + " lies outside the tensor");
    };
    for (const Region& r : task_.reads) check(r, "read");
    for (const Region& r : task_.writes) check(r, "write");
  }

  const Tensor& tensor(TensorId t) const { return p_.tensors[t]; }
  const Operator& op() const { return op_; }

  // The one write region on tensor t.
  const Region& write_on(TensorId t) const {
    const Region* found = nullptr;
    for (const Region& r : task_.writes)
      if (r.tensor == t) {
        if (found) fail("writes tensor '" + tensor(t).name + "' twice");
        found = &r;
      }
    if (!found) fail("does not write tensor '" + tensor(t).name + "'");
    return *found;
  }
  bool writes(TensorId t) const {
    return std::any_of(task_.writes.begin(), task_.writes.end(), [&](const Region& r) { return r.tensor == t; });
  }
  // The first read region on tensor t.
  const Region& read_on(TensorId t) const {
    for (const Region& r : task_.reads)
      if (r.tensor == t) return r;
    fail("does not read tensor '" + tensor(t).name + "'");
  }
  // A tensor that the task writes (reads) but that is not among the op's outputs
  // (inputs), of the given dtype: the scratch of split attention and argmax.
  TensorId scratch(bool write, DType dt) const {
    const auto& regions = write ? task_.writes : task_.reads;
    const auto& own = write ? op_.outputs : op_.inputs;
    for (const Region& r : regions)
      if (std::find(own.begin(), own.end(), r.tensor) == own.end() && tensor(r.tensor).dtype == dt)
        return r.tensor;
    fail(std::string("has no ") + (write ? "written " : "read ") + std::string(name_of(dt)) +
         " scratch tensor");
  }
  // The kernel reads `need`: some declared read region must contain it.
  void need(const Region& need) const {
    for (const Region& r : task_.reads)
      if (r.contains(need)) return;
    fail("reads " + region_str(p_, need) + " but declares no read region containing it");
  }
  void require(bool ok, const std::string& what) const {
    if (!ok) fail(what);
  }
  void kind_of_op(std::initializer_list<OpKind> kinds) const {
    for (OpKind k : kinds)
      if (op_.kind == k) return;
    fail("task kind does not belong to a " + std::string(name_of(op_.kind)) + " operator");
  }

 private:
  const Module& m_;
  const Program& p_;
  TaskId id_;
  const Task& task_;
  const Operator& op_;
};

// The argmax partial slot a task writes (an argmax_partial, or an lm_head's with
// fuse-argmax): out1 = the f32 values, out2 = the i32 indices, both [B, P]; its rows.
void argmax_slot(const TaskResolver& r, TaskPlan& plan) {
  plan.out1 = r.scratch(true, DType::kF32);
  plan.out2 = r.scratch(true, DType::kI32);
  const Region& wv = r.write_on(plan.out1);
  r.require(r.tensor(plan.out1).shape.size() == 2 && r.tensor(plan.out2).shape == r.tensor(plan.out1).shape,
            "argmax partial tensors must both be [B, P]");
  r.require(r.write_on(plan.out2).dims == wv.dims && wv.dims[1].size() == 1,
            "must write one partial slot of both argmax tensors");
  plan.b0 = wv.dims[0].lo;
  plan.b1 = wv.dims[0].hi;
  plan.slot = wv.dims[1].lo;
}

// A task that appends k and v (a kv_append, or a fused attention's): the batch rows and
// kv heads it writes (both caches alike, all positions, whole heads); checks that it
// reads those columns of k and v and the norm weight, if any.
std::pair<Range, Range> appended(const TaskResolver& r, TensorId k, TensorId v, TensorId kc, TensorId vc,
                                 TensorId norm) {
  const Region& wk = r.write_on(kc);
  const auto& cs = r.tensor(kc).shape;
  r.require(r.write_on(vc).dims == wk.dims, "must write the same region of both caches");
  r.require(wk.dims[1] == Range{0, cs[1]} && wk.dims[3] == Range{0, cs[3]},
            "must declare all positions and the whole head of its cache rows");
  const Range rows = wk.dims[0], heads = wk.dims[2];
  const Range cols{heads.lo * cs[3], heads.hi * cs[3]};
  r.need(box(k, {rows, cols}));
  r.need(box(v, {rows, cols}));
  if (norm >= 0) r.need(box(norm, {{0, cs[3]}}));
  return {rows, heads};
}

// The rope frequencies and norm eps of a fused attention (fuse-attention).
void fused_attention_attrs(const Operator& op, TaskPlan& plan) {
  plan.inv_freq = rope_inverse_frequencies(op.attrs);
  if (attention_form(op).q_norm >= 0) plan.eps = attr_float(op.attrs, "eps");
}

// Resolves one task into its plan: one method per task kind.
class Planner {
 public:
  Planner(const Module& m, TaskId id) : r_(m, id), task_(m.graph.tasks[id]), op_(r_.op()) {
    plan_.id = id;
    plan_.kind = task_.kind;
    plan_.op = task_.op;
  }

  TaskPlan run() {
    r_.check_regions();
    plan();
    return std::move(plan_);
  }

 private:
  void plan() {
    switch (task_.kind) {
      case TaskKind::kEmbedding:
        return embedding();
      case TaskKind::kRmsNorm:
      case TaskKind::kQkNorm:
        return norm();
      case TaskKind::kLinear:
      case TaskKind::kLmHead:
        return linear();
      case TaskKind::kRope:
        return rope();
      case TaskKind::kKvAppend:
        return kv_append();
      case TaskKind::kAttention:
      case TaskKind::kAttentionPartial:
        return attention();
      case TaskKind::kAttentionMerge:
        return attention_merge();
      case TaskKind::kSiluMul:
      case TaskKind::kResidualAdd:
        return elementwise();
      case TaskKind::kArgmaxPartial:
        return argmax_partial();
      case TaskKind::kArgmaxReduce:
        return argmax_reduce();
    }
  }

  void rows_cols(const Region& w) {
    plan_.b0 = w.dims[0].lo;
    plan_.b1 = w.dims[0].hi;
    if (w.dims.size() > 1) {
      plan_.c0 = w.dims[1].lo;
      plan_.c1 = w.dims[1].hi;
    }
  }

  void embedding() {
    r_.kind_of_op({OpKind::kEmbedding});
    plan_.in0 = op_.inputs[0];
    plan_.in1 = op_.inputs[1];
    plan_.out0 = op_.outputs[0];
    rows_cols(r_.write_on(plan_.out0));
    r_.need(box(plan_.in0, {{0, r_.tensor(plan_.in0).shape[0]}, {plan_.c0, plan_.c1}}));
    r_.need(box(plan_.in1, {{plan_.b0, plan_.b1}}));
  }

  void norm() {
    const bool qk = task_.kind == TaskKind::kQkNorm;
    r_.kind_of_op({qk ? OpKind::kQkNorm : OpKind::kRmsNorm});
    plan_.in0 = op_.inputs[0];
    plan_.in1 = op_.inputs[1];
    plan_.out0 = op_.outputs[0];
    plan_.eps = attr_float(op_.attrs, "eps");
    rows_cols(r_.write_on(plan_.out0));
    const int64_t width = r_.tensor(plan_.out0).shape[1];
    plan_.head_dim = qk ? attr_int(op_.attrs, "head_dim") : width;
    r_.require(plan_.c0 % plan_.head_dim == 0 && plan_.c1 % plan_.head_dim == 0,
               qk ? "must write whole heads" : "must write whole rows");
    r_.need(box(plan_.in0, {{plan_.b0, plan_.b1}, {plan_.c0, plan_.c1}}));
    r_.need(box(plan_.in1, {{0, plan_.head_dim}}));
  }

  void linear() {
    r_.kind_of_op({task_.kind == TaskKind::kLinear ? OpKind::kLinear : OpKind::kLmHead});
    const LinearForm f = linear_form(op_);
    plan_.in0 = f.x;
    plan_.in1 = f.weight;
    plan_.out0 = f.y;
    rows_cols(r_.write_on(plan_.out0));
    const int64_t k = r_.tensor(plan_.in0).shape[1];
    r_.need(box(plan_.in0, {{plan_.b0, plan_.b1}, {0, k}}));
    r_.need(box(plan_.in1, {{plan_.c0, plan_.c1}, {0, k}}));
    plan_.up = f.up;
    plan_.residual = f.residual;
    plan_.norm = f.norm;
    if (f.up >= 0) r_.need(box(f.up, {{plan_.c0, plan_.c1}, {0, k}}));
    if (f.residual >= 0) r_.need(box(f.residual, {{plan_.b0, plan_.b1}, {plan_.c0, plan_.c1}}));
    if (f.norm >= 0) {
      plan_.eps = attr_float(op_.attrs, "eps");
      r_.need(box(f.norm, {{0, k}}));
    }
    if (f.tokens >= 0) {  // also the argmax partial of its vocabulary rows (fuse-argmax)
      const int64_t b0 = plan_.b0, b1 = plan_.b1;
      argmax_slot(r_, plan_);
      r_.require(plan_.b0 == b0 && plan_.b1 == b1, "must write the argmax partial of the rows it computes");
    }
    plan_.coop = coop_share(task_);
    if (plan_.coop.cooperative())
      r_.require(plan_.c0 == 0 && plan_.c1 == r_.tensor(plan_.in1).shape[0],
                 "a cooperative share must declare its operator's whole output");
  }

  void rope() {
    r_.kind_of_op({OpKind::kRope});
    plan_.in0 = op_.inputs[0];
    plan_.out0 = op_.outputs[0];
    plan_.head_dim = attr_int(op_.attrs, "head_dim");
    plan_.inv_freq = rope_inverse_frequencies(op_.attrs);
    rows_cols(r_.write_on(plan_.out0));
    r_.require(plan_.c0 % plan_.head_dim == 0 && plan_.c1 % plan_.head_dim == 0, "must write whole heads");
    r_.need(box(plan_.in0, {{plan_.b0, plan_.b1}, {plan_.c0, plan_.c1}}));
  }

  void kv_append() {
    r_.kind_of_op({OpKind::kKvAppend, OpKind::kAttention});
    if (op_.kind == OpKind::kAttention) {  // a fused attention appends (several splits)
      const AttentionForm f = attention_form(op_);
      r_.require(f.fused(), "a kv_append task belongs to a fused attention only");
      plan_.in0 = f.k, plan_.in1 = f.v, plan_.out0 = f.k_cache, plan_.out1 = f.v_cache, plan_.norm = f.k_norm;
      fused_attention_attrs(op_, plan_);
    } else {
      if (op_.attrs.count("theta")) plan_.inv_freq = rope_inverse_frequencies(op_.attrs);  // ropes k (fuse-rope)
      plan_.in0 = op_.inputs[0], plan_.in1 = op_.inputs[1], plan_.out0 = op_.outputs[0], plan_.out1 = op_.outputs[1];
    }
    const auto [rows, heads] = appended(r_, plan_.in0, plan_.in1, plan_.out0, plan_.out1, plan_.norm);
    plan_.b0 = rows.lo, plan_.b1 = rows.hi, plan_.c0 = heads.lo, plan_.c1 = heads.hi;
  }

  void attention() {
    r_.kind_of_op({OpKind::kAttention});
    const AttentionForm f = attention_form(op_);
    plan_.in0 = f.q;
    plan_.in1 = f.k_cache;
    plan_.in2 = f.v_cache;
    const int64_t nq = attr_int(op_.attrs, "num_q_heads"), nkv = attr_int(op_.attrs, "num_kv_heads");
    plan_.attention = {nq / nkv, attr_int(op_.attrs, "head_dim"),
                       static_cast<float>(attr_float(op_.attrs, "scale"))};
    const int64_t g = plan_.attention.group, hd = plan_.attention.head_dim;
    const int64_t seq = r_.tensor(plan_.in1).shape[1];
    if (f.fused()) {
      plan_.norm = f.q_norm;
      fused_attention_attrs(op_, plan_);
      if (f.q_norm >= 0) r_.need(box(f.q_norm, {{0, hd}}));
    }
    int64_t j0, j1;  // query heads
    if (task_.kind == TaskKind::kAttention) {
      plan_.out0 = f.y;
      const Region& w = r_.write_on(plan_.out0);
      r_.require(w.dims[1].lo % hd == 0 && w.dims[1].hi % hd == 0 && !w.dims[1].empty(),
                 "must write whole query heads");
      plan_.b0 = w.dims[0].lo;
      plan_.b1 = w.dims[0].hi;
      j0 = w.dims[1].lo / hd;
      j1 = w.dims[1].hi / hd;
      plan_.s0 = 0;
      plan_.s1 = seq;
    } else {
      plan_.out0 = r_.scratch(true, DType::kF32);
      const auto& ps = r_.tensor(plan_.out0).shape;
      r_.require(ps.size() == 4 && ps[0] == r_.tensor(plan_.in0).shape[0] && ps[1] == nq && ps[3] == hd + 2,
                 "partial tensor '" + r_.tensor(plan_.out0).name + "' must be [B, nq, splits, hd+2]");
      const Region& w = r_.write_on(plan_.out0);
      r_.require(w.dims[2].size() == 1 && w.dims[3] == Range{0, hd + 2},
                 "must write one split slot of whole partial records");
      r_.require(w.dims[1].lo % g == 0 && w.dims[1].hi % g == 0,
                 "must write whole kv-head groups of query heads");
      plan_.b0 = w.dims[0].lo;
      plan_.b1 = w.dims[0].hi;
      j0 = w.dims[1].lo;
      j1 = w.dims[1].hi;
      plan_.slot = w.dims[2].lo;
      const Region& kr = r_.read_on(plan_.in1);
      plan_.s0 = kr.dims[1].lo;
      plan_.s1 = kr.dims[1].hi;
    }
    const Range kv_heads{j0 / g, (j1 - 1) / g + 1};
    r_.need(box(plan_.in0, {{plan_.b0, plan_.b1}, {j0 * hd, j1 * hd}}));
    for (TensorId cache : {plan_.in1, plan_.in2})
      r_.need(box(cache, {{plan_.b0, plan_.b1}, {plan_.s0, plan_.s1}, kv_heads, {0, hd}}));
    if (task_.kind == TaskKind::kAttentionPartial) {
      plan_.c0 = kv_heads.lo, plan_.c1 = kv_heads.hi;
      return;
    }
    plan_.c0 = j0, plan_.c1 = j1;
    if (!f.fused()) return;
    // One split: the task appends its kv heads first (whole groups), or prepares position
    // pos's k and v itself (the operator's kv_append tasks store them after it).
    plan_.k = f.k, plan_.v = f.v, plan_.k_norm = f.k_norm;
    plan_.appends = r_.writes(f.k_cache);
    if (plan_.appends) {
      const auto [rows, heads] = appended(r_, f.k, f.v, f.k_cache, f.v_cache, f.k_norm);
      r_.require(rows == Range{plan_.b0, plan_.b1} && heads == kv_heads && j0 % g == 0 && j1 % g == 0,
                 "must append the rows and kv heads it attends with, for all of their query heads");
    } else {
      const Range cols{kv_heads.lo * hd, kv_heads.hi * hd};
      r_.need(box(f.k, {{plan_.b0, plan_.b1}, cols}));
      r_.need(box(f.v, {{plan_.b0, plan_.b1}, cols}));
      if (f.k_norm >= 0) r_.need(box(f.k_norm, {{0, hd}}));
    }
  }

  void attention_merge() {
    r_.kind_of_op({OpKind::kAttention});
    plan_.head_dim = attr_int(op_.attrs, "head_dim");
    plan_.out0 = op_.outputs[0];
    plan_.in0 = r_.scratch(false, DType::kF32);
    const auto& ps = r_.tensor(plan_.in0).shape;
    const int64_t hd = plan_.head_dim;
    r_.require(ps.size() == 4 && ps[0] == r_.tensor(plan_.out0).shape[0] &&
                   ps[1] * hd == r_.tensor(plan_.out0).shape[1] && ps[3] == hd + 2,
               "partial tensor '" + r_.tensor(plan_.in0).name + "' must be [B, nq, splits, hd+2]");
    const Region& w = r_.write_on(plan_.out0);
    r_.require(w.dims[1].lo % hd == 0 && w.dims[1].hi % hd == 0, "must write whole query heads");
    plan_.b0 = w.dims[0].lo;
    plan_.b1 = w.dims[0].hi;
    plan_.c0 = w.dims[1].lo / hd;
    plan_.c1 = w.dims[1].hi / hd;
    r_.need(box(plan_.in0, {{plan_.b0, plan_.b1}, {plan_.c0, plan_.c1}, {0, ps[2]}, {0, hd + 2}}));
  }

  void elementwise() {
    r_.kind_of_op({task_.kind == TaskKind::kSiluMul ? OpKind::kSiluMul : OpKind::kResidualAdd});
    plan_.in0 = op_.inputs[0];
    plan_.in1 = op_.inputs[1];
    plan_.out0 = op_.outputs[0];
    rows_cols(r_.write_on(plan_.out0));
    r_.need(box(plan_.in0, {{plan_.b0, plan_.b1}, {plan_.c0, plan_.c1}}));
    r_.need(box(plan_.in1, {{plan_.b0, plan_.b1}, {plan_.c0, plan_.c1}}));
  }

  void argmax_partial() {
    r_.kind_of_op({OpKind::kArgmax});
    plan_.in0 = op_.inputs[0];
    argmax_slot(r_, plan_);
    const Region& lr = r_.read_on(plan_.in0);
    plan_.c0 = lr.dims[1].lo;
    plan_.c1 = lr.dims[1].hi;
    r_.need(box(plan_.in0, {{plan_.b0, plan_.b1}, {plan_.c0, plan_.c1}}));
  }

  void argmax_reduce() {
    r_.kind_of_op({OpKind::kArgmax, OpKind::kLmHead});
    plan_.out0 = op_.kind == OpKind::kArgmax ? op_.outputs[0] : linear_form(op_).tokens;
    r_.require(plan_.out0 >= 0, "an argmax_reduce task belongs to an lm_head with an argmax only");
    plan_.in0 = r_.scratch(false, DType::kF32);
    plan_.in1 = r_.scratch(false, DType::kI32);
    const auto& vs = r_.tensor(plan_.in0).shape;
    r_.require(vs.size() == 2 && r_.tensor(plan_.in1).shape == vs && vs[0] == r_.tensor(plan_.out0).shape[0] &&
                   vs[1] >= 1,
               "argmax partial tensors must both be [B, P]");
    rows_cols(r_.write_on(plan_.out0));
    for (TensorId t : {plan_.in0, plan_.in1}) r_.need(box(t, {{plan_.b0, plan_.b1}, {0, vs[1]}}));
  }

  TaskResolver r_;
  const Task& task_;
  const Operator& op_;
  TaskPlan plan_;
};

}  // namespace

TaskPlan prepare_task(const Module& m, TaskId id) {
  if (id < 0 || id >= static_cast<TaskId>(m.graph.tasks.size()))
    throw Error("no task " + std::to_string(id));
  const Task& task = m.graph.tasks[id];
  if (task.op < 0 || task.op >= static_cast<OpId>(m.program.ops.size()))
    throw Error(describe_task(m, id) + ": refers to op " + std::to_string(task.op) + ", which does not exist");
  check_op(m.program, task.op);
  return Planner(m, id).run();
}

namespace {

// How a kv_append or a fused attention prepares its k or q heads (numerics.h HeadPrep).
HeadPrep head_prep(const TaskPlan& p, const TensorStore& st, TensorId norm) {
  HeadPrep prep;
  if (!p.inv_freq.empty()) prep.rope_inv = &p.inv_freq;
  if (norm >= 0) prep.norm = &st.at(norm), prep.eps = p.eps;
  return prep;
}

}  // namespace

void run_task(const TaskPlan& p, TensorStore& st, const StepContext& ctx) {
  switch (p.kind) {
    case TaskKind::kEmbedding:
      embedding_block(st.at(p.in0), st.at(p.in1), st.at(p.out0), p.b0, p.b1, p.c0, p.c1, ctx);
      return;
    case TaskKind::kRmsNorm:
      rms_norm_block(st.at(p.in0), st.at(p.in1), st.at(p.out0), p.b0, p.b1, p.eps);
      return;
    case TaskKind::kQkNorm:
      qk_norm_block(st.at(p.in0), st.at(p.in1), st.at(p.out0), p.b0, p.b1, p.c0, p.c1, p.head_dim, p.eps);
      return;
    case TaskKind::kLinear:
    case TaskKind::kLmHead: {
      LinearExtras e;
      if (p.residual >= 0) e.residual = &st.at(p.residual);
      if (p.norm >= 0) e.norm = &st.at(p.norm), e.eps = p.eps;
      if (p.up >= 0) e.up = &st.at(p.up);
      if (!p.coop.cooperative()) {
        linear_block(st.at(p.in0), st.at(p.in1), st.at(p.out0), p.b0, p.b1, p.c0, p.c1, e);
        if (p.out1 >= 0)  // fuse-argmax: the argmax partial of the logits just written
          argmax_partial_block(st.at(p.out0), st.at(p.out1), st.at(p.out2), p.b0, p.b1, p.c0, p.c1, p.slot, ctx);
        return;
      }
      // A cooperative share: the units share, share + shares, ...; its argmax partial
      // over their rows, starting from (-inf, 0) (docs/ir.md).
      std::vector<std::pair<int64_t, int64_t>> units;
      for (int64_t u = p.coop.share; u < p.coop.units(p.c1); u += p.coop.shares)
        units.emplace_back(u * p.coop.unit_rows, std::min(p.c1, (u + 1) * p.coop.unit_rows));
      for (const auto& [n0, n1] : units) linear_block(st.at(p.in0), st.at(p.in1), st.at(p.out0), p.b0, p.b1, n0, n1, e);
      if (p.out1 >= 0) argmax_partial_units(st.at(p.out0), st.at(p.out1), st.at(p.out2), p.b0, p.b1, units, p.slot, ctx);
      return;
    }
    case TaskKind::kRope:
      rope_block(st.at(p.in0), st.at(p.out0), p.b0, p.b1, p.c0, p.c1, p.head_dim, p.inv_freq, ctx.step);
      return;
    case TaskKind::kKvAppend:
      kv_append_block(st.at(p.in0), st.at(p.in1), st.at(p.out0), st.at(p.out1), p.b0, p.b1, p.c0, p.c1,
                      ctx.step, head_prep(p, st, p.norm));
      return;
    case TaskKind::kAttention: {
      const HeadPrep q_prep = head_prep(p, st, p.norm);
      const int64_t g = p.attention.group;
      CurrentKv current;
      if (p.k >= 0) current = {&st.at(p.k), &st.at(p.v), head_prep(p, st, p.k_norm)};
      if (p.appends)  // a fused attention over whole groups appends their kv heads first
        kv_append_block(*current.k, *current.v, st.at(p.in1), st.at(p.in2), p.b0, p.b1, p.c0 / g, p.c1 / g, ctx.step,
                        current.prep);
      attention_block(st.at(p.in0), st.at(p.in1), st.at(p.in2), st.at(p.out0), p.b0, p.b1, p.c0, p.c1,
                      p.attention, ctx.step, p.inv_freq.empty() ? nullptr : &q_prep,
                      p.k >= 0 && !p.appends ? &current : nullptr);
      return;
    }
    case TaskKind::kAttentionPartial: {
      const HeadPrep q_prep = head_prep(p, st, p.norm);
      attention_partial_block(st.at(p.in0), st.at(p.in1), st.at(p.in2), st.at(p.out0), p.b0, p.b1, p.c0, p.c1,
                              p.attention, ctx.step, p.s0, p.s1, p.slot, p.inv_freq.empty() ? nullptr : &q_prep);
      return;
    }
    case TaskKind::kAttentionMerge:
      attention_merge_block(st.at(p.in0), st.at(p.out0), p.b0, p.b1, p.c0, p.c1, p.head_dim);
      return;
    case TaskKind::kSiluMul:
      silu_mul_block(st.at(p.in0), st.at(p.in1), st.at(p.out0), p.b0, p.b1, p.c0, p.c1);
      return;
    case TaskKind::kResidualAdd:
      residual_add_block(st.at(p.in0), st.at(p.in1), st.at(p.out0), p.b0, p.b1, p.c0, p.c1);
      return;
    case TaskKind::kArgmaxPartial:
      argmax_partial_block(st.at(p.in0), st.at(p.out1), st.at(p.out2), p.b0, p.b1, p.c0, p.c1, p.slot, ctx);
      return;
    case TaskKind::kArgmaxReduce: {
      const TensorBuffer& val = st.at(p.in0);
      const TensorBuffer& idx = st.at(p.in1);
      TensorBuffer& tokens = st.at(p.out0);
      const int64_t parts = val.shape[1];
      for (int64_t b = p.b0; b < p.b1; ++b) {
        float best = val.load(b * parts);
        int32_t bi = idx.load_i32(b * parts);
        for (int64_t q = 1; q < parts; ++q) {
          const float v = val.load(b * parts + q);
          const int32_t i = idx.load_i32(b * parts + q);
          if (v > best || (v == best && i < bi)) {
            best = v;
            bi = i;
          }
        }
        tokens.store_i32(b, bi);
        if (ctx.recorder) ctx.recorder->record(ctx.step, b, bi, best);
      }
      return;
    }
  }
}

}  // namespace mpk
