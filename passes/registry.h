// The pass registry: every pass by name. Adding a pass is one line in registry.cc.
#pragma once

#include <string>
#include <vector>

#include "passes/pass.h"

namespace mpk {

const std::vector<PassInfo>& all_passes();
// nullptr when unknown.
const PassInfo* find_pass(const std::string& name);

// Each pass file defines one of these.
PassInfo fuse_residual_pass_info();
PassInfo fuse_norm_pass_info();
PassInfo fuse_rope_pass_info();
PassInfo fuse_attention_pass_info();
PassInfo fuse_swiglu_pass_info();
PassInfo fuse_argmax_pass_info();
PassInfo decompose_pass_info();
PassInfo infer_deps_pass_info();
PassInfo assign_sm_pass_info();

}  // namespace mpk
