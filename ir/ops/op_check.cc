// The helpers of the operator families' signature and region rules, and the dispatch
// through the kinds table (ir/kinds.def) to each family's file.
#include "ir/ops/op_check.h"

#include <algorithm>
#include <cmath>

#include "ir/verifier.h"

namespace mpk {
namespace ops {

void OpSignature::arity(size_t nin, size_t nout) const {
  if (op_.inputs.size() != nin || op_.outputs.size() != nout)
    bad("expects " + std::to_string(nin) + " inputs and " + std::to_string(nout) + " outputs, has " +
        std::to_string(op_.inputs.size()) + " and " + std::to_string(op_.outputs.size()));
}

const std::vector<int64_t>& OpSignature::rank(const Tensor& t, const std::string& role, size_t r) const {
  if (t.shape.size() != r)
    bad(role + " '" + t.name + "' must have rank " + std::to_string(r) + ", has shape " + format_shape(t.shape));
  return t.shape;
}

void OpSignature::floating(const Tensor& t, const std::string& role) const {
  if (t.dtype == DType::kI32) bad(role + " '" + t.name + "' must be a floating-point tensor, is i32");
}

void OpSignature::dtype(const Tensor& t, const std::string& role, DType d) const {
  if (t.dtype != d)
    bad(role + " '" + t.name + "' must be " + std::string(name_of(d)) + ", is " + std::string(name_of(t.dtype)));
}

void OpSignature::same_shape(const Tensor& a, const std::string& ra, const Tensor& b, const std::string& rb) const {
  if (a.shape != b.shape)
    bad(ra + " '" + a.name + "' " + format_shape(a.shape) + " and " + rb + " '" + b.name + "' " +
        format_shape(b.shape) + " must have the same shape");
}

void OpSignature::dim(int64_t got, int64_t want, const std::string& what) const {
  if (got != want) bad(what + " is " + std::to_string(got) + ", expected " + std::to_string(want));
}

int64_t OpSignature::positive_int(const std::string& key) const {
  const int64_t v = attr_int(op_.attrs, key);
  if (v <= 0) bad("attribute '" + key + "' = " + std::to_string(v) + " must be positive");
  return v;
}

void OpSignature::positive_float(const std::string& key) const {
  const double v = attr_float(op_.attrs, key);
  if (!(v > 0) || !std::isfinite(v))
    bad("attribute '" + key + "' = " + format_attr_value(v) + " must be positive and finite");
}

int64_t OpSignature::rope_attrs() const {
  const int64_t hd = positive_int("head_dim");
  if (hd % 2 != 0) bad("head_dim " + std::to_string(hd) + " must be even");
  positive_float("theta");
  const std::string& type = attr_str(op_.attrs, "rope_type");
  if (type == "llama3") {
    positive_float("factor");
    positive_float("low_freq_factor");
    positive_float("high_freq_factor");
    positive_int("original_max_position_embeddings");
    if (attr_float(op_.attrs, "high_freq_factor") <= attr_float(op_.attrs, "low_freq_factor"))
      bad("high_freq_factor must be greater than low_freq_factor");
  } else if (type != "default") {
    bad("rope_type '" + type + "' is neither \"default\" nor \"llama3\"");
  }
  return hd;
}

void OpSignature::caches(const Tensor& kc, const Tensor& vc, int64_t rows) const {
  const auto& k = rank(kc, "k_cache", 4);
  rank(vc, "v_cache", 4);
  floating(kc, "k_cache");
  floating(vc, "v_cache");
  same_shape(kc, "k_cache", vc, "v_cache");
  if (k[0] <= 0 || rows % k[0] != 0)
    bad("cache dimension 0 (the sequences) is " + std::to_string(k[0]) + ", which does not divide the " +
        std::to_string(rows) + " rows of its operands");
}

const Region& TaskRegionRules::key(const Task& task, TensorId t, const char* role) const {
  for (const Region& r : task.writes)
    if (r.tensor == t) return r;
  bad(std::string("writes no region of its ") + role + " '" + p_.tensors[t].name + "'");
}

bool TaskRegionRules::writes_on(const Task& task, TensorId t) {
  return std::any_of(task.writes.begin(), task.writes.end(), [&](const Region& r) { return r.tensor == t; });
}

TensorId TaskRegionRules::need(TensorId t, const char* what) const {
  if (t < 0) bad(std::string("writes no ") + what + " scratch tensor");
  return t;
}

int64_t TaskRegionRules::head_of(const Range& c, int64_t width, const std::string& region) const {
  if (c.lo % width != 0 || c.size() != width)
    bad("writes " + region + ": not the " + std::to_string(width) + " columns of one kv head's query heads");
  return c.lo / width;
}

namespace {

// Operands that exist, with a known dtype and positive dimensions: what every family's
// signature may index and multiply.
std::string operand_problem(const Program& p, const Operator& op) {
  if (static_cast<int>(op.kind) >= kNumOpKinds) return "unknown operator kind " + std::to_string(int(op.kind));
  for (const auto* list : {&op.inputs, &op.outputs})
    for (TensorId t : *list) {
      if (t < 0 || t >= static_cast<TensorId>(p.tensors.size()))
        return "refers to tensor id " + std::to_string(t) + ", which does not exist";
      const Tensor& tt = p.tensors[t];
      if (static_cast<int>(tt.dtype) > static_cast<int>(DType::kI32))
        return "tensor '" + tt.name + "' has an unknown dtype";
      for (int64_t d : tt.shape)
        if (d <= 0) return "tensor '" + tt.name + "' has an empty dimension";
    }
  return "";
}

void family_signature(OpSignature& s) {
  switch (s.op().kind) {
#define MPK_OP_KIND(Name, name, family, proto, rgb) \
  case OpKind::k##Name:                             \
    return family##_signature(s);
#include "ir/kinds.def"
  }
}

// docs/ir.md: only a fused attention (its caches) reads and writes the same tensor; any
// other operator would read what its own tasks overwrite.
void no_in_place(const OpSignature& s) {
  if (s.in_place_allowed()) return;
  for (TensorId o : s.op().outputs)
    for (TensorId i : s.op().inputs)
      if (o == i) OpSignature::bad("'" + s.tensor(o).name + "' is both an input and an output");
}

}  // namespace

std::string signature_problem(const Program& p, const Operator& op) {
  if (std::string problem = operand_problem(p, op); !problem.empty()) return problem;
  try {
    OpSignature s(p, op);
    family_signature(s);
    no_in_place(s);  // after the family's arity checks: a few operands each
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

bool owns_task(const Operator& op, TaskKind k) {
  switch (op.kind) {
#define MPK_OP_KIND(Name, name, family, proto, rgb) \
  case OpKind::k##Name:                             \
    return family##_owns_task(op, k);
#include "ir/kinds.def"
  }
  return false;
}

TaskRegions task_regions(const TaskRegionRules& rules, const Task& t) {
  switch (t.kind) {
#define MPK_TASK_KIND(Name, name, family, proto, stage, streams) \
  case TaskKind::k##Name:                                        \
    return family##_task_regions(rules, t);
#include "ir/kinds.def"
  }
  TaskRegionRules::bad("has an unknown task kind");
}

}  // namespace ops

std::string op_signature_problem(const Program& p, const Operator& op) { return ops::signature_problem(p, op); }

}  // namespace mpk
