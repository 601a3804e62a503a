// Shared machinery of the operator fusions: access-order checks, the group rewrite and
// the pass wrapper that compacts the program afterwards.
#include "passes/fuse_common.h"

#include <algorithm>

#include "ir/verifier.h"

namespace mpk {
namespace {

bool contains(const std::vector<OpId>& v, OpId o) { return std::find(v.begin(), v.end(), o) != v.end(); }

// Whether moving every access of the group's operators to `at` keeps them in order.
bool keeps_order_at(const Program& p, const std::vector<OpId>& group, OpId at,
                    const std::vector<TensorId>& dropped) {
  auto crosses = [&](const std::vector<OpId>& users, OpId lo, OpId hi) {
    return std::any_of(users.begin(), users.end(),
                       [&](OpId u) { return u > lo && u < hi && !contains(group, u); });
  };
  for (OpId o : group) {
    const OpId lo = std::min(o, at), hi = std::max(o, at);
    for (TensorId t : p.ops[o].inputs)
      if (std::find(dropped.begin(), dropped.end(), t) == dropped.end() && crosses(p.writers[t], lo, hi))
        return false;
    for (TensorId t : p.ops[o].outputs)
      if (std::find(dropped.begin(), dropped.end(), t) == dropped.end() &&
          (crosses(p.writers[t], lo, hi) || crosses(p.readers[t], lo, hi)))
        return false;
  }
  return true;
}

// Removes the tensors flagged in `dead` and renumbers the operators' operands.
void drop_tensors(Program& p, const std::vector<bool>& dead) {
  std::vector<TensorId> remap(p.tensors.size(), -1);
  std::vector<Tensor> kept;
  for (size_t t = 0; t < p.tensors.size(); ++t) {
    if (dead[t]) continue;
    remap[t] = static_cast<TensorId>(kept.size());
    kept.push_back(std::move(p.tensors[t]));
  }
  p.tensors = std::move(kept);
  for (Operator& op : p.ops) {
    for (TensorId& t : op.inputs) t = remap[t];
    for (TensorId& t : op.outputs) t = remap[t];
  }
}

class FusePass : public Pass {
 public:
  FusePass(const char* name, FuseFn fuse) : name_(name), fuse_(fuse) {}
  PassResult run(Module& m) override {
    if (!m.graph.empty())
      return PassResult::failure(std::string(name_) + " runs on operators: put it before decompose");
    Program& p = m.program;
    p.rebuild_use_lists();
    std::vector<bool> dead_op(p.ops.size(), false), dead_tensor(p.tensors.size(), false);
    if (!fuse_(p, dead_op, dead_tensor)) return PassResult::ok(false);
    compact(p, dead_op, dead_tensor);
    return PassResult::ok(true);
  }

 private:
  const char* name_;
  FuseFn fuse_;
};

}  // namespace

void compact(Program& p, const std::vector<bool>& dead_op, const std::vector<bool>& dead_tensor) {
  std::vector<Operator> kept;
  for (size_t o = 0; o < p.ops.size(); ++o)
    if (!dead_op[o]) kept.push_back(std::move(p.ops[o]));
  p.ops = std::move(kept);
  drop_tensors(p, dead_tensor);
  p.rebuild_use_lists();
}

bool written_between(const Program& p, TensorId t, OpId lo, OpId hi) {
  return std::any_of(p.writers[t].begin(), p.writers[t].end(), [&](OpId w) { return w > lo && w < hi; });
}

bool read_between(const Program& p, TensorId t, OpId lo, OpId hi) {
  return std::any_of(p.readers[t].begin(), p.readers[t].end(), [&](OpId r) { return r > lo && r < hi; });
}

bool only_link(const Program& p, TensorId t, OpId writer, OpId reader) {
  return p.writers[t] == std::vector<OpId>{writer} && p.readers[t] == std::vector<OpId>{reader};
}

bool fuse_group(Program& p, std::vector<OpId> group, Operator fused, const std::vector<TensorId>& dropped,
                std::vector<bool>& dead_op, std::vector<bool>& dead_tensor) {
  std::sort(group.begin(), group.end());
  if (!op_signature_problem(p, fused).empty()) return false;
  for (OpId o = 0; o < static_cast<OpId>(p.ops.size()); ++o)
    if (!dead_op[o] && !contains(group, o) && p.ops[o].name == fused.name) return false;
  auto at = std::find_if(group.rbegin(), group.rend(), [&](OpId o) { return keeps_order_at(p, group, o, dropped); });
  if (at == group.rend()) return false;
  for (OpId o : group) {
    dead_op[o] = o != *at;
    if (o != *at) p.ops[o].inputs.clear(), p.ops[o].outputs.clear();
  }
  p.ops[*at] = std::move(fused);
  for (TensorId t : dropped) dead_tensor[t] = true;
  p.rebuild_use_lists();
  return true;
}

std::unique_ptr<Pass> fuse_pass(const char* name, FuseFn fn) {
  return std::make_unique<FusePass>(name, fn);
}

PassInfo fuse_pass_info(const char* name, const char* summary, FuseFn fn) {
  PassInfo info;
  info.name = name;
  info.summary = summary;
  info.create = [name, fn](const PassOptions&) { return fuse_pass(name, fn); };
  return info;
}

}  // namespace mpk
