// Per-task kernels: resolution and checking of a task's regions, and execution.
#include "runtime/cpu/task_kernels.h"

#include <algorithm>

#include "ir/error.h"
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

}  // namespace

TaskPlan prepare_task(const Module& m, TaskId id) {
  if (id < 0 || id >= static_cast<TaskId>(m.graph.tasks.size()))
    throw Error("no task " + std::to_string(id));
  const Task& task = m.graph.tasks[id];
  if (task.op < 0 || task.op >= static_cast<OpId>(m.program.ops.size()))
    throw Error(describe_task(m, id) + ": refers to op " + std::to_string(task.op) + ", which does not exist");
  check_op(m.program, task.op);
  TaskResolver r(m, id);
  r.check_regions();
  const Operator& op = r.op();
  TaskPlan plan;
  plan.id = id;
  plan.kind = task.kind;
  plan.op = task.op;
  auto rows_cols = [&](const Region& w) {
    plan.b0 = w.dims[0].lo;
    plan.b1 = w.dims[0].hi;
    if (w.dims.size() > 1) {
      plan.c0 = w.dims[1].lo;
      plan.c1 = w.dims[1].hi;
    }
  };
  switch (task.kind) {
    case TaskKind::kEmbedding: {
      r.kind_of_op({OpKind::kEmbedding});
      plan.in0 = op.inputs[0];
      plan.in1 = op.inputs[1];
      plan.out0 = op.outputs[0];
      rows_cols(r.write_on(plan.out0));
      r.need(box(plan.in0, {{0, r.tensor(plan.in0).shape[0]}, {plan.c0, plan.c1}}));
      r.need(box(plan.in1, {{plan.b0, plan.b1}}));
      break;
    }
    case TaskKind::kRmsNorm:
    case TaskKind::kQkNorm: {
      const bool qk = task.kind == TaskKind::kQkNorm;
      r.kind_of_op({qk ? OpKind::kQkNorm : OpKind::kRmsNorm});
      plan.in0 = op.inputs[0];
      plan.in1 = op.inputs[1];
      plan.out0 = op.outputs[0];
      plan.eps = attr_float(op.attrs, "eps");
      rows_cols(r.write_on(plan.out0));
      const int64_t width = r.tensor(plan.out0).shape[1];
      plan.head_dim = qk ? attr_int(op.attrs, "head_dim") : width;
      r.require(plan.c0 % plan.head_dim == 0 && plan.c1 % plan.head_dim == 0,
                qk ? "must write whole heads" : "must write whole rows");
      r.need(box(plan.in0, {{plan.b0, plan.b1}, {plan.c0, plan.c1}}));
      r.need(box(plan.in1, {{0, plan.head_dim}}));
      break;
    }
    case TaskKind::kLinear:
    case TaskKind::kLmHead: {
      r.kind_of_op({task.kind == TaskKind::kLinear ? OpKind::kLinear : OpKind::kLmHead});
      plan.in0 = op.inputs[0];
      plan.in1 = op.inputs[1];
      plan.out0 = op.outputs[0];
      rows_cols(r.write_on(plan.out0));
      const int64_t k = r.tensor(plan.in0).shape[1];
      r.need(box(plan.in0, {{plan.b0, plan.b1}, {0, k}}));
      r.need(box(plan.in1, {{plan.c0, plan.c1}, {0, k}}));
      plan.extra = linear_extra(op);
      if (plan.extra == LinearExtra::kResidual) {
        plan.in2 = op.inputs[2];
        r.need(box(plan.in2, {{plan.b0, plan.b1}, {plan.c0, plan.c1}}));
      } else if (plan.extra == LinearExtra::kNorm) {
        plan.in2 = op.inputs[2];
        plan.eps = attr_float(op.attrs, "eps");
        r.need(box(plan.in2, {{0, k}}));
      }
      break;
    }
    case TaskKind::kRope: {
      r.kind_of_op({OpKind::kRope});
      plan.in0 = op.inputs[0];
      plan.out0 = op.outputs[0];
      plan.head_dim = attr_int(op.attrs, "head_dim");
      plan.inv_freq = rope_inv_freq(op.attrs);
      rows_cols(r.write_on(plan.out0));
      r.require(plan.c0 % plan.head_dim == 0 && plan.c1 % plan.head_dim == 0, "must write whole heads");
      r.need(box(plan.in0, {{plan.b0, plan.b1}, {plan.c0, plan.c1}}));
      break;
    }
    case TaskKind::kKvAppend: {
      r.kind_of_op({OpKind::kKvAppend});
      if (op.attrs.count("theta")) plan.inv_freq = rope_inv_freq(op.attrs);  // ropes k (fuse-rope)
      plan.in0 = op.inputs[0];
      plan.in1 = op.inputs[1];
      plan.out0 = op.outputs[0];
      plan.out1 = op.outputs[1];
      const Region& wk = r.write_on(plan.out0);
      const auto& cs = r.tensor(plan.out0).shape;
      r.require(r.write_on(plan.out1).dims == wk.dims, "must write the same region of both caches");
      r.require(wk.dims[1] == Range{0, cs[1]} && wk.dims[3] == Range{0, cs[3]},
                "must declare all positions and the whole head of its cache rows");
      plan.b0 = wk.dims[0].lo;
      plan.b1 = wk.dims[0].hi;
      plan.c0 = wk.dims[2].lo;
      plan.c1 = wk.dims[2].hi;
      const int64_t hd = cs[3];
      r.need(box(plan.in0, {{plan.b0, plan.b1}, {plan.c0 * hd, plan.c1 * hd}}));
      r.need(box(plan.in1, {{plan.b0, plan.b1}, {plan.c0 * hd, plan.c1 * hd}}));
      break;
    }
    case TaskKind::kAttention:
    case TaskKind::kAttentionPartial: {
      r.kind_of_op({OpKind::kAttention});
      plan.in0 = op.inputs[0];
      plan.in1 = op.inputs[1];
      plan.in2 = op.inputs[2];
      const int64_t nq = attr_int(op.attrs, "num_q_heads"), nkv = attr_int(op.attrs, "num_kv_heads");
      plan.attention = {nq / nkv, attr_int(op.attrs, "head_dim"),
                        static_cast<float>(attr_float(op.attrs, "scale"))};
      const int64_t g = plan.attention.group, hd = plan.attention.head_dim;
      const int64_t seq = r.tensor(plan.in1).shape[1];
      int64_t j0, j1;  // query heads
      if (task.kind == TaskKind::kAttention) {
        plan.out0 = op.outputs[0];
        const Region& w = r.write_on(plan.out0);
        r.require(w.dims[1].lo % (g * hd) == 0 && w.dims[1].hi % (g * hd) == 0,
                  "must write whole kv-head groups of query heads");
        plan.b0 = w.dims[0].lo;
        plan.b1 = w.dims[0].hi;
        j0 = w.dims[1].lo / hd;
        j1 = w.dims[1].hi / hd;
        plan.s0 = 0;
        plan.s1 = seq;
      } else {
        plan.out0 = r.scratch(true, DType::kF32);
        const auto& ps = r.tensor(plan.out0).shape;
        r.require(ps.size() == 4 && ps[0] == r.tensor(plan.in0).shape[0] && ps[1] == nq && ps[3] == hd + 2,
                  "partial tensor '" + r.tensor(plan.out0).name + "' must be [B, nq, splits, hd+2]");
        const Region& w = r.write_on(plan.out0);
        r.require(w.dims[2].size() == 1 && w.dims[3] == Range{0, hd + 2},
                  "must write one split slot of whole partial records");
        r.require(w.dims[1].lo % g == 0 && w.dims[1].hi % g == 0,
                  "must write whole kv-head groups of query heads");
        plan.b0 = w.dims[0].lo;
        plan.b1 = w.dims[0].hi;
        j0 = w.dims[1].lo;
        j1 = w.dims[1].hi;
        plan.slot = w.dims[2].lo;
        const Region& kr = r.read_on(plan.in1);
        plan.s0 = kr.dims[1].lo;
        plan.s1 = kr.dims[1].hi;
      }
      plan.c0 = j0 / g;
      plan.c1 = j1 / g;
      r.need(box(plan.in0, {{plan.b0, plan.b1}, {j0 * hd, j1 * hd}}));
      for (TensorId cache : {plan.in1, plan.in2})
        r.need(box(cache, {{plan.b0, plan.b1}, {plan.s0, plan.s1}, {plan.c0, plan.c1}, {0, hd}}));
      break;
    }
    case TaskKind::kAttentionMerge: {
      r.kind_of_op({OpKind::kAttention});
      plan.head_dim = attr_int(op.attrs, "head_dim");
      plan.out0 = op.outputs[0];
      plan.in0 = r.scratch(false, DType::kF32);
      const auto& ps = r.tensor(plan.in0).shape;
      const int64_t hd = plan.head_dim;
      r.require(ps.size() == 4 && ps[0] == r.tensor(plan.out0).shape[0] &&
                    ps[1] * hd == r.tensor(plan.out0).shape[1] && ps[3] == hd + 2,
                "partial tensor '" + r.tensor(plan.in0).name + "' must be [B, nq, splits, hd+2]");
      const Region& w = r.write_on(plan.out0);
      r.require(w.dims[1].lo % hd == 0 && w.dims[1].hi % hd == 0, "must write whole query heads");
      plan.b0 = w.dims[0].lo;
      plan.b1 = w.dims[0].hi;
      plan.c0 = w.dims[1].lo / hd;
      plan.c1 = w.dims[1].hi / hd;
      r.need(box(plan.in0, {{plan.b0, plan.b1}, {plan.c0, plan.c1}, {0, ps[2]}, {0, hd + 2}}));
      break;
    }
    case TaskKind::kSiluMul:
    case TaskKind::kResidualAdd: {
      r.kind_of_op({task.kind == TaskKind::kSiluMul ? OpKind::kSiluMul : OpKind::kResidualAdd});
      plan.in0 = op.inputs[0];
      plan.in1 = op.inputs[1];
      plan.out0 = op.outputs[0];
      rows_cols(r.write_on(plan.out0));
      r.need(box(plan.in0, {{plan.b0, plan.b1}, {plan.c0, plan.c1}}));
      r.need(box(plan.in1, {{plan.b0, plan.b1}, {plan.c0, plan.c1}}));
      break;
    }
    case TaskKind::kArgmaxPartial: {
      r.kind_of_op({OpKind::kArgmax});
      plan.in0 = op.inputs[0];
      plan.out0 = r.scratch(true, DType::kF32);
      plan.out1 = r.scratch(true, DType::kI32);
      const Region& wv = r.write_on(plan.out0);
      r.require(r.tensor(plan.out0).shape.size() == 2 && r.tensor(plan.out1).shape == r.tensor(plan.out0).shape,
                "argmax partial tensors must both be [B, P]");
      r.require(r.write_on(plan.out1).dims == wv.dims && wv.dims[1].size() == 1,
                "must write one partial slot of both argmax tensors");
      plan.b0 = wv.dims[0].lo;
      plan.b1 = wv.dims[0].hi;
      plan.slot = wv.dims[1].lo;
      const Region& lr = r.read_on(plan.in0);
      plan.c0 = lr.dims[1].lo;
      plan.c1 = lr.dims[1].hi;
      r.need(box(plan.in0, {{plan.b0, plan.b1}, {plan.c0, plan.c1}}));
      break;
    }
    case TaskKind::kArgmaxReduce: {
      r.kind_of_op({OpKind::kArgmax});
      plan.out0 = op.outputs[0];
      plan.in0 = r.scratch(false, DType::kF32);
      plan.in1 = r.scratch(false, DType::kI32);
      const auto& vs = r.tensor(plan.in0).shape;
      r.require(vs.size() == 2 && r.tensor(plan.in1).shape == vs && vs[0] == r.tensor(plan.out0).shape[0] &&
                    vs[1] >= 1,
                "argmax partial tensors must both be [B, P]");
      rows_cols(r.write_on(plan.out0));
      for (TensorId t : {plan.in0, plan.in1}) r.need(box(t, {{plan.b0, plan.b1}, {0, vs[1]}}));
      break;
    }
  }
  return plan;
}

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
      if (p.extra == LinearExtra::kResidual) e.residual = &st.at(p.in2);
      if (p.extra == LinearExtra::kNorm) e.norm = &st.at(p.in2), e.eps = p.eps;
      linear_block(st.at(p.in0), st.at(p.in1), st.at(p.out0), p.b0, p.b1, p.c0, p.c1, e);
      return;
    }
    case TaskKind::kRope:
      rope_block(st.at(p.in0), st.at(p.out0), p.b0, p.b1, p.c0, p.c1, p.head_dim, p.inv_freq, ctx.step);
      return;
    case TaskKind::kKvAppend:
      kv_append_block(st.at(p.in0), st.at(p.in1), st.at(p.out0), st.at(p.out1), p.b0, p.b1, p.c0,
                      p.c1, ctx.step, p.inv_freq.empty() ? nullptr : &p.inv_freq);
      return;
    case TaskKind::kAttention:
      attention_block(st.at(p.in0), st.at(p.in1), st.at(p.in2), st.at(p.out0), p.b0, p.b1, p.c0,
                      p.c1, p.attention, ctx.step);
      return;
    case TaskKind::kAttentionPartial:
      attention_partial_block(st.at(p.in0), st.at(p.in1), st.at(p.in2), st.at(p.out0), p.b0, p.b1,
                              p.c0, p.c1, p.attention, ctx.step, p.s0, p.s1, p.slot);
      return;
    case TaskKind::kAttentionMerge:
      attention_merge_block(st.at(p.in0), st.at(p.out0), p.b0, p.b1, p.c0, p.c1, p.head_dim);
      return;
    case TaskKind::kSiluMul:
      silu_mul_block(st.at(p.in0), st.at(p.in1), st.at(p.out0), p.b0, p.b1, p.c0, p.c1);
      return;
    case TaskKind::kResidualAdd:
      residual_add_block(st.at(p.in0), st.at(p.in1), st.at(p.out0), p.b0, p.b1, p.c0, p.c1);
      return;
    case TaskKind::kArgmaxPartial: {
      TensorBuffer& val = st.at(p.out0);
      TensorBuffer& idx = st.at(p.out1);
      const int64_t parts = val.shape[1];
      for (int64_t b = p.b0; b < p.b1; ++b) {
        float v;
        int32_t i;
        argmax_row(st.at(p.in0), b, p.c0, p.c1, &v, &i);
        val.store(b * parts + p.slot, v);
        idx.store_i32(b * parts + p.slot, i);
      }
      return;
    }
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
