// codegen's part of an operator family (ir/kinds.def): for every family a file
// codegen/ops/<family>.cc defines, in namespace mpk::codegen,
//   void describe_<family>(DescBuilder& b, TaskId t, TaskDescription& out)
// which fills one task's descriptor through the named slots of its kind
// (runtime/device/task_slots.cuh), names the task body instantiation that runs it (a
// call of runtime/device/tasks_<family>.cuh) and, where the dispatch warp should warm
// L2 for it, its prefetch. generate_megakernel (codegen/megakernel.cc) reaches them
// through the kinds table, so a family without one does not link, and nvcc refuses a
// body that runtime/device/ lacks.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "codegen/megakernel.h"

namespace mpk::codegen {

int32_t float_bits(float f);

// One task's descriptor, the call of the dispatch case that runs it and the dispatch
// warp's L2 prefetch for it ("" for none).
struct TaskDescription {
  abi::TaskDesc d{};
  std::string call, prefetch;
};

// What the family files build descriptors with: the module, the options and the
// Megakernel being filled (relocations, stream shapes, pools, RoPE tables, the shared
// memory the bodies need).
class DescBuilder {
 public:
  DescBuilder(const Module& m, const MegakernelOptions& opt, Megakernel& out)
      : m(m), opt(opt), out(out), warps(opt.threads / 32), batch(out.batch), rows(out.batch * out.chunk) {}

  const Module& m;
  const MegakernelOptions& opt;
  Megakernel& out;
  const int warps;
  const int batch;  // sequences (attr batch): the KV caches' rows
  const int rows;   // rows of every activation: batch x chunk (docs/ir.md "Prefill chunks")

  const Tensor& tensor(TensorId id) const { return m.program.tensor(id); }
  const Task& task(TaskId t) const { return m.graph.tasks[t]; }
  const Operator& op_of(TaskId t) const { return m.program.ops.at(task(t).op); }
  [[noreturn]] void fail(TaskId t, const std::string& what) const;
  // Operand i of t's operator (fails naming t when it has fewer).
  TensorId input(TaskId t, size_t i) const;
  TensorId output(TaskId t, size_t i) const;
  // The first region on tensor `id` (`role` names it when there is none).
  const Region& find(TaskId t, const std::vector<Region>& regions, TensorId id, const char* role) const;
  // The first region of dtype d on another tensor than `except`.
  const Region& first_of_dtype(TaskId t, const std::vector<Region>& regions, DType d, const char* role,
                               TensorId except = -1) const;
  void need_full_rows(TaskId t, const Region& r) const;
  void check_head_dim(TaskId t, int64_t hd) const;

  // Slot `slot` of descriptor t points at element `elem_offset` of tensor `id`.
  void reloc(TaskId t, abi::PtrSlot slot, TensorId id, int64_t elem_offset);
  // The slot gets the (cos, sin) table of the RoPE that `attrs` describe.
  void reloc_rope(TaskId t, abi::PtrSlot slot, const Attrs& attrs);
  static void set_arg(abi::TaskDesc& d, abi::ArgSlot slot, int64_t value) {
    d.arg[slot.index] = static_cast<int32_t>(value);
  }
  // The bodies need at least `bytes` of shared scratch.
  void scratch(int bytes) { scratch_needed = std::max(scratch_needed, bytes); }
  int scratch_bytes() const { return scratch_needed; }
  // The dispatch case of `call` (each distinct call once).
  int instantiate(const std::string& call, const std::string& prefetch = "");

  // "<a, b, c>", or with `more` (", true, 0") appended inside the brackets.
  static std::string targs(std::initializer_list<int64_t> v, const std::string& more = "");
  // The f32 bits of a fused attention's q/k norm eps, 0 without norms.
  static int32_t qk_norm_eps_bits(const Operator& op);

 private:
  int32_t rope_table(const Attrs& attrs);
  std::map<std::string, int> inst_index_;
  int scratch_needed = 16;
};

#define MPK_TASK_KIND(Name, name, family, proto, stage, streams) \
  void describe_##family(DescBuilder& b, TaskId t, TaskDescription& out);
#include "ir/kinds.def"

// The linear family's groups (codegen/ops/linear.cc): adjacent linear tasks on one
// worker that read the same x, run as one descriptor (docs/megakernel.md).
// The rows of linear task t when it may be in a group, else 0.
int64_t linear_group_rows(const DescBuilder& b, TaskId t);
// Whether linear task n reads what the group led by t reads (x, K, its norm), so that
// it may join it; both may be in a group.
bool linear_same_group_input(const DescBuilder& b, TaskId t, TaskId n);
// The group's descriptor (appended to out.tasks as `index`), its stream shape and its
// relocations: the leader's pointers, each member's output in its group slot.
void add_linear_group(DescBuilder& b, const std::vector<TaskId>& members, int32_t index);

}  // namespace mpk::codegen
