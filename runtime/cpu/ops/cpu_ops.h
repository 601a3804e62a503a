// The CPU executor's part of an operator family (ir/kinds.def): for every family a file
// runtime/cpu/ops/<family>.cc defines, in namespace mpk::cpu,
//   void run_<family>_op(const Program&, const Operator&, TensorStore&, const StepContext&)
//       the whole operator for one step (the reference, runtime/cpu/reference.h);
//   TaskRun plan_<family>_task(const TaskResolver&)
//       one of its tasks resolved and checked once (the regions it touches declared,
//       shapes consistent), returning what runs it for a step (runtime/cpu/task_kernels.h).
// reference.cc and task_kernels.cc reach them through the kinds table, so a family
// without them does not link. The arithmetic they share is runtime/cpu/numerics.h.
#pragma once

#include <functional>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "ir/module.h"
#include "runtime/cpu/numerics.h"

namespace mpk::cpu {

// What runs one resolved task for a step; it captures the task's operands by name.
using TaskRun = std::function<void(TensorStore&, const StepContext&)>;

// One task of a module, for its family's planner: its regions, its operator, and checks
// that throw mpk::Error("<task>: <problem>").
class TaskResolver {
 public:
  TaskResolver(const Module& m, TaskId id);

  [[noreturn]] void fail(const std::string& what) const;
  // Every region on an existing tensor, of its rank, inside it.
  void check_regions() const;

  const Program& program() const { return p_; }
  const Task& task() const { return task_; }
  const Operator& op() const { return op_; }
  const Tensor& tensor(TensorId t) const { return p_.tensors[t]; }

  // The one write region on tensor t.
  const Region& write_on(TensorId t) const;
  bool writes(TensorId t) const;
  // The first read region on tensor t.
  const Region& read_on(TensorId t) const;
  // A tensor that the task writes (reads) but that is not among the op's outputs
  // (inputs), of the given dtype: the scratch of split attention and argmax.
  TensorId scratch(bool write, DType dt) const;
  // The kernel reads `need`: some declared read region must contain it.
  void need(const Region& need) const;
  void require(bool ok, const std::string& what) const {
    if (!ok) fail(what);
  }
  void kind_of_op(std::initializer_list<OpKind> kinds) const;

 private:
  const Module& m_;
  const Program& p_;
  TaskId id_;
  const Task& task_;
  const Operator& op_;
};

inline Region box(TensorId t, std::vector<Range> dims) { return Region{t, std::move(dims)}; }

// Rows b0:b1 and (when it has them) columns c0:c1 of a write region.
struct RowsCols {
  int64_t b0 = 0, b1 = 0, c0 = 0, c1 = 0;
};
RowsCols rows_cols(const Region& w);

// The argmax partial slot a task writes (an argmax_partial, or an lm_head's with
// fuse-argmax): the f32 values and i32 indices tensors [B, P], its rows and its slot.
struct ArgmaxSlot {
  TensorId val = -1, idx = -1;
  int64_t b0 = 0, b1 = 0, slot = 0;
};
ArgmaxSlot argmax_slot(const TaskResolver& r);

// A task that appends k and v (a kv_append, or a fused attention's): the rows of k and v
// (those of the sequences it writes) and the kv heads it writes (both caches alike, all
// positions, whole heads); checks that it reads those columns of k and v and the norm
// weight, if any.
std::pair<Range, Range> appended(const TaskResolver& r, TensorId k, TensorId v, TensorId kc, TensorId vc,
                                 TensorId norm);

// How a kv_append or a fused attention prepares its k or q heads: rope frequencies
// (empty: none) and a norm weight (-1: none) with its eps (numerics.h HeadPrep).
struct HeadSetup {
  std::vector<float> rope_inv;
  TensorId norm = -1;
  double eps = 0;
  // Points into this setup: keep it alive while the HeadPrep is used.
  HeadPrep prep(const TensorStore& st) const;
};

// tokens[b] = the argmax of logits row b, recorded for the step (an argmax operator, or
// an lm_head fused with its argmax; runtime/cpu/ops/argmax.cc).
void argmax_rows(const TensorBuffer& logits, TensorBuffer& tokens, const StepContext& ctx);

#define MPK_OP_KIND(Name, name, family, proto, rgb) \
  void run_##family##_op(const Program& p, const Operator& op, TensorStore& st, const StepContext& ctx);
#define MPK_TASK_KIND(Name, name, family, proto, stage, streams) TaskRun plan_##family##_task(const TaskResolver& r);
#include "ir/kinds.def"

}  // namespace mpk::cpu
