// The list of registered passes, one line each.
#include "passes/registry.h"

namespace mpk {

const std::vector<PassInfo>& all_passes() {
  static const std::vector<PassInfo> passes = {
      fuse_residual_pass_info(),
      fuse_norm_pass_info(),
      fuse_rope_pass_info(),
      fuse_attention_pass_info(),
      fuse_swiglu_pass_info(),
      fuse_argmax_pass_info(),
      decompose_pass_info(),
      infer_deps_pass_info(),
      assign_sm_pass_info(),
  };
  return passes;
}

const PassInfo* find_pass(const std::string& name) {
  for (const PassInfo& p : all_passes())
    if (p.name == name) return &p;
  return nullptr;
}

}  // namespace mpk
