// The helpers the family files build descriptors with (codegen/ops/desc_builder.h).
#include "codegen/ops/desc_builder.h"

#include <algorithm>
#include <cstring>

#include "ir/error.h"
#include "ir/rope.h"

namespace mpk::codegen {

int32_t float_bits(float f) {
  int32_t i;
  std::memcpy(&i, &f, sizeof i);
  return i;
}

void DescBuilder::fail(TaskId t, const std::string& what) const {
  throw Error("codegen: task " + std::to_string(t) + " (" + std::string(name_of(task(t).kind)) + " of " +
              op_of(t).name + "): " + what);
}

TensorId DescBuilder::input(TaskId t, size_t i) const {
  if (i >= op_of(t).inputs.size()) fail(t, "operator has too few inputs");
  return op_of(t).inputs[i];
}

TensorId DescBuilder::output(TaskId t, size_t i) const {
  if (i >= op_of(t).outputs.size()) fail(t, "operator has too few outputs");
  return op_of(t).outputs[i];
}

const Region& DescBuilder::find(TaskId t, const std::vector<Region>& regions, TensorId id, const char* role) const {
  for (const Region& r : regions)
    if (r.tensor == id) return r;
  fail(t, std::string("no ") + role + " region on tensor '" + tensor(id).name + "'");
}

const Region& DescBuilder::first_of_dtype(TaskId t, const std::vector<Region>& regions, DType d, const char* role,
                                          TensorId except) const {
  for (const Region& r : regions)
    if (tensor(r.tensor).dtype == d && r.tensor != except) return r;
  fail(t, std::string("no ") + role + " region of dtype " + std::string(name_of(d)));
}

void DescBuilder::need_full_rows(TaskId t, const Region& r) const {
  const Tensor& tt = tensor(r.tensor);
  for (size_t i = 0; i < r.dims.size(); ++i)
    if (r.dims[i].lo != 0 || r.dims[i].hi != tt.shape[i]) fail(t, "expects the whole of '" + tt.name + "', got a part of it");
}

void DescBuilder::check_head_dim(TaskId t, int64_t hd) const {
  if (hd % 8 != 0) fail(t, "head_dim " + std::to_string(hd) + " is not a multiple of 8");
}

void DescBuilder::reloc(TaskId t, abi::PtrSlot slot, TensorId id, int64_t elem_offset) {
  out.relocations.push_back({t, slot.index, id, elem_offset * size_of(tensor(id).dtype)});
}

void DescBuilder::reloc_rope(TaskId t, abi::PtrSlot slot, const Attrs& attrs) {
  out.relocations.push_back({t, slot.index, -1, 0, rope_table(attrs)});
}

int DescBuilder::instantiate(const std::string& call, const std::string& prefetch) {
  auto it = inst_index_.find(call);
  if (it != inst_index_.end()) return it->second;
  const int idx = static_cast<int>(out.instantiations.size());
  out.instantiations.push_back(call);
  out.prefetches.push_back(prefetch);
  inst_index_.emplace(call, idx);
  return idx;
}

int32_t DescBuilder::rope_table(const Attrs& attrs) {
  const std::vector<float> inv = rope_inverse_frequencies(attrs);
  auto it = std::find(out.rope_inv.begin(), out.rope_inv.end(), inv);
  if (it != out.rope_inv.end()) return static_cast<int32_t>(it - out.rope_inv.begin());
  out.rope_inv.push_back(inv);
  return static_cast<int32_t>(out.rope_inv.size() - 1);
}

std::string DescBuilder::targs(std::initializer_list<int64_t> v, const std::string& more) {
  std::string s = "<";
  bool first = true;
  for (int64_t x : v) {
    s += (first ? "" : ", ") + std::to_string(x);
    first = false;
  }
  return s + more + ">";
}

int32_t DescBuilder::qk_norm_eps_bits(const Operator& op) {
  return attention_form(op).q_norm >= 0 ? float_bits(static_cast<float>(attr_float(op.attrs, "eps"))) : 0;
}

}  // namespace mpk::codegen
