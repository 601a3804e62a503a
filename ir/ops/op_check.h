// The ir layer's part of an operator family (ir/kinds.def): what a family file
// ir/ops/<family>.cc states about its operators and tasks, with the helpers it states
// it with. For every family of the kinds table a family file defines
//   <family>_signature(OpSignature&)           its operators' operands and attrs
//                                              (docs/ir.md, operator table)
//   <family>_owns_task(const Operator&, kind)  the task kinds its operators decompose into
//   <family>_task_regions(TaskRegionRules&, t) the exact regions of one of its tasks
//                                              (docs/ir.md, "Tasks")
// in namespace mpk::ops; the dispatch (op_check.cc) reaches them through the table, so
// a family that lacks one does not link. Internal to ir/ (the verifier, and
// op_signature_problem, which the CPU executor and decompose use too).
#pragma once

#include <string>
#include <vector>

#include "ir/error.h"
#include "ir/module.h"

namespace mpk {
namespace ops {

// One operator's signature check: each failed check throws mpk::Error with the problem.
// `role` arguments are the names docs/ir.md gives the operands ("x", "W", ...).
class OpSignature {
 public:
  OpSignature(const Program& p, const Operator& op) : p_(p), op_(op) {}

  const Operator& op() const { return op_; }
  const Program& program() const { return p_; }
  const Tensor& in(size_t i) const { return p_.tensors[op_.inputs[i]]; }
  const Tensor& out(size_t i) const { return p_.tensors[op_.outputs[i]]; }
  const Tensor& tensor(TensorId t) const { return p_.tensors[t]; }

  [[noreturn]] static void bad(const std::string& what) { throw Error(what); }
  void arity(size_t nin, size_t nout) const;
  const std::vector<int64_t>& rank(const Tensor& t, const std::string& role, size_t r) const;
  void floating(const Tensor& t, const std::string& role) const;
  void dtype(const Tensor& t, const std::string& role, DType d) const;
  void same_shape(const Tensor& a, const std::string& ra, const Tensor& b, const std::string& rb) const;
  void dim(int64_t got, int64_t want, const std::string& what) const;
  int64_t positive_int(const std::string& key) const;
  void positive_float(const std::string& key) const;
  // The attrs of a RoPE (a rope operator, or a kv_append or fused attention that ropes
  // k); returns head_dim.
  int64_t rope_attrs() const;
  // The caches [B, S, nkv, hd] of kv_append and attention, whose operands have `rows` rows:
  // B sequences of rows / B rows each (docs/ir.md "Prefill chunks").
  void caches(const Tensor& kc, const Tensor& vc, int64_t rows) const;
  // Its operators may read and write the same tensor (docs/ir.md: only a fused
  // attention's caches); the family then checks which.
  void allow_in_place() { in_place_ok_ = true; }
  bool in_place_allowed() const { return in_place_ok_; }

 private:
  const Program& p_;
  const Operator& op_;
  bool in_place_ok_ = false;
};

// The scratch tensors an operator's tasks use (by the verifier's reading of the tasks):
// argmax partials (f32 and i32 [B, P]) and attention partials (f32 [B, nq, splits, hd+2]).
struct OpScratch {
  TensorId val = -1, idx = -1;
  TensorId part = -1;
};

struct TaskRegions {
  std::vector<Region> reads, writes;
};

// What a family's task_regions works from: the program, the task's operator's scratch
// and its writes (a task's form is read from the columns, head or slot it writes).
class TaskRegionRules {
 public:
  TaskRegionRules(const Program& p, const OpScratch& scratch) : p_(p), scratch_(scratch) {}

  const Program& program() const { return p_; }
  const Operator& op_of(const Task& t) const { return p_.ops[t.op]; }
  const OpScratch& scratch() const { return scratch_; }
  const std::vector<int64_t>& shape(TensorId t) const { return p_.tensors[t].shape; }
  Range all(TensorId t, size_t d = 0) const { return {0, shape(t)[d]}; }
  static Region reg(TensorId t, std::vector<Range> dims) { return Region{t, std::move(dims)}; }
  Region whole(TensorId t) const { return full_region(t, shape(t)); }

  [[noreturn]] static void bad(const std::string& what) { throw Error(what); }
  // The task's first write on tensor t: the parameters of its form are read from it.
  const Region& key(const Task& task, TensorId t, const char* role) const;
  static bool writes_on(const Task& task, TensorId t);
  // A scratch tensor the task's form needs (`what` names it when the task has none).
  TensorId need(TensorId t, const char* what) const;
  // The kv head whose `width` columns (of query heads, or query head slots) c is exactly.
  int64_t head_of(const Range& c, int64_t width, const std::string& region) const;

 private:
  const Program& p_;
  const OpScratch& scratch_;
};

// The signature problem of op (operands exist and are well-formed, then its family's
// signature), or "". The one check behind the verifier's structure.op-signature, the CPU
// executor's check of each operator and decompose's.
std::string signature_problem(const Program& p, const Operator& op);
// Whether an operator of op's kind decomposes into tasks of kind k (docs/ir.md, "Tasks").
bool owns_task(const Operator& op, TaskKind k);
// The regions docs/ir.md gives task t's kind for what it writes; throws mpk::Error
// naming the problem when its writes give no such form.
TaskRegions task_regions(const TaskRegionRules& rules, const Task& t);

#define MPK_OP_KIND(Name, name, family, proto, rgb) \
  void family##_signature(OpSignature& s);          \
  bool family##_owns_task(const Operator& op, TaskKind k);
#define MPK_TASK_KIND(Name, name, family, proto, stage, streams) \
  TaskRegions family##_task_regions(const TaskRegionRules& rules, const Task& t);
#include "ir/kinds.def"

}  // namespace ops
}  // namespace mpk
