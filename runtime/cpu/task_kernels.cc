// Per-task kernels: the resolution and checks every family's planner shares, and the
// dispatch through the kinds table to runtime/cpu/ops/<family>.cc.
#include "runtime/cpu/task_kernels.h"

#include <algorithm>

#include "ir/error.h"
#include "runtime/cpu/reference.h"

namespace mpk {
namespace cpu {

TaskResolver::TaskResolver(const Module& m, TaskId id)
    : m_(m), p_(m.program), id_(id), task_(m.graph.tasks[id]), op_(p_.ops[task_.op]) {}

void TaskResolver::fail(const std::string& what) const { throw Error(describe_task(m_, id_) + ": " + what); }

void TaskResolver::check_regions() const {
  auto check = [&](const Region& r, const char* what) {
    if (r.tensor < 0 || r.tensor >= static_cast<TensorId>(p_.tensors.size()))
      fail(std::string(what) + " region on tensor id " + std::to_string(r.tensor) + ", which does not exist");
    const Tensor& t = p_.tensors[r.tensor];
    if (r.dims.size() != t.shape.size())
      fail(std::string(what) + " region " + format_region(t.name, r) + " has the wrong rank");
    for (size_t d = 0; d < r.dims.size(); ++d)
      if (r.dims[d].lo < 0 || r.dims[d].hi < r.dims[d].lo || r.dims[d].hi > t.shape[d])
        fail(std::string(what) + " region " + format_region(t.name, r) + " lies outside the tensor");
  };
  for (const Region& r : task_.reads) check(r, "read");
  for (const Region& r : task_.writes) check(r, "write");
}

const Region& TaskResolver::write_on(TensorId t) const {
  const Region* found = nullptr;
  for (const Region& r : task_.writes)
    if (r.tensor == t) {
      if (found) fail("writes tensor '" + tensor(t).name + "' twice");
      found = &r;
    }
  if (!found) fail("does not write tensor '" + tensor(t).name + "'");
  return *found;
}

bool TaskResolver::writes(TensorId t) const {
  return std::any_of(task_.writes.begin(), task_.writes.end(), [&](const Region& r) { return r.tensor == t; });
}

const Region& TaskResolver::read_on(TensorId t) const {
  for (const Region& r : task_.reads)
    if (r.tensor == t) return r;
  fail("does not read tensor '" + tensor(t).name + "'");
}

TensorId TaskResolver::scratch(bool write, DType dt) const {
  const auto& regions = write ? task_.writes : task_.reads;
  const auto& own = write ? op_.outputs : op_.inputs;
  for (const Region& r : regions)
    if (std::find(own.begin(), own.end(), r.tensor) == own.end() && tensor(r.tensor).dtype == dt) return r.tensor;
  fail(std::string("has no ") + (write ? "written " : "read ") + std::string(name_of(dt)) + " scratch tensor");
}

void TaskResolver::need(const Region& need) const {
  for (const Region& r : task_.reads)
    if (r.contains(need)) return;
  fail("reads " + format_region(p_.tensors[need.tensor].name, need) + " but declares no read region containing it");
}

void TaskResolver::kind_of_op(std::initializer_list<OpKind> kinds) const {
  for (OpKind k : kinds)
    if (op_.kind == k) return;
  fail("task kind does not belong to a " + std::string(name_of(op_.kind)) + " operator");
}

RowsCols rows_cols(const Region& w) {
  RowsCols rc{w.dims[0].lo, w.dims[0].hi, 0, 0};
  if (w.dims.size() > 1) rc.c0 = w.dims[1].lo, rc.c1 = w.dims[1].hi;
  return rc;
}

ArgmaxSlot argmax_slot(const TaskResolver& r) {
  ArgmaxSlot s;
  s.val = r.scratch(true, DType::kF32);
  s.idx = r.scratch(true, DType::kI32);
  const Region& wv = r.write_on(s.val);
  r.require(r.tensor(s.val).shape.size() == 2 && r.tensor(s.idx).shape == r.tensor(s.val).shape,
            "argmax partial tensors must both be [B, P]");
  r.require(r.write_on(s.idx).dims == wv.dims && wv.dims[1].size() == 1,
            "must write one partial slot of both argmax tensors");
  s.b0 = wv.dims[0].lo;
  s.b1 = wv.dims[0].hi;
  s.slot = wv.dims[1].lo;
  return s;
}

std::pair<Range, Range> appended(const TaskResolver& r, TensorId k, TensorId v, TensorId kc, TensorId vc,
                                 TensorId norm) {
  const Region& wk = r.write_on(kc);
  const auto& cs = r.tensor(kc).shape;
  r.require(r.write_on(vc).dims == wk.dims, "must write the same region of both caches");
  r.require(wk.dims[1] == Range{0, cs[1]} && wk.dims[3] == Range{0, cs[3]},
            "must declare all positions and the whole head of its cache rows");
  const int64_t chunk = r.tensor(k).shape[0] / cs[0];  // operand rows per cache row (sequence)
  const Range rows{wk.dims[0].lo * chunk, wk.dims[0].hi * chunk}, heads = wk.dims[2];
  const Range cols{heads.lo * cs[3], heads.hi * cs[3]};
  r.need(box(k, {rows, cols}));
  r.need(box(v, {rows, cols}));
  if (norm >= 0) r.need(box(norm, {{0, cs[3]}}));
  return {rows, heads};
}

HeadPrep HeadSetup::prep(const TensorStore& st) const {
  HeadPrep p;
  if (!rope_inv.empty()) p.rope_inv = &rope_inv;
  if (norm >= 0) p.norm = &st.at(norm), p.eps = eps;
  return p;
}

namespace {

TaskRun plan(const TaskResolver& r) {
  switch (r.task().kind) {
#define MPK_TASK_KIND(Name, name, family, proto, stage, streams) \
  case TaskKind::k##Name:                                        \
    return plan_##family##_task(r);
#include "ir/kinds.def"
  }
  r.fail("has an unknown task kind");
}

}  // namespace
}  // namespace cpu

TaskPlan prepare_task(const Module& m, TaskId id) {
  if (id < 0 || id >= static_cast<TaskId>(m.graph.tasks.size())) throw Error("no task " + std::to_string(id));
  const Task& task = m.graph.tasks[id];
  if (task.op < 0 || task.op >= static_cast<OpId>(m.program.ops.size()))
    throw Error(describe_task(m, id) + ": refers to op " + std::to_string(task.op) + ", which does not exist");
  check_op(m.program, task.op);
  const cpu::TaskResolver r(m, id);
  r.check_regions();
  return TaskPlan{id, task.kind, task.op, cpu::plan(r)};
}

void run_task(const TaskPlan& plan, TensorStore& store, const StepContext& ctx) { plan.run(store, ctx); }

}  // namespace mpk
