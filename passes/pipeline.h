// Text pipelines: `decompose{tile=64},infer-deps,assign-sm{policy=critical-path}`.
//   pipeline := pass (',' pass)*
//   pass     := name ('{' option (',' option)* '}')?
//   option   := key '=' value        (key, value: no spaces, ',', '{', '}' or '=')
// Printing a parsed pipeline and parsing it again gives the same pipeline.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "passes/pass.h"

namespace mpk {

struct PipelineEntry {
  std::string pass;
  PassOptions options;
  bool operator==(const PipelineEntry&) const = default;
};

using Pipeline = std::vector<PipelineEntry>;

// Throws mpk::Error("pipeline: <what> at column N") for malformed text. Does not check
// pass names; PassManager does.
Pipeline parse_pipeline(std::string_view text);
std::string print_pipeline(const Pipeline& p);

// The default pipeline, run by mpk-opt when no --pass-pipeline is given: the fusions,
// decompose, infer-deps and assign-sm with kDefaultPolicy (a test holds the two together).
inline constexpr const char* kDefaultPipeline =
    "fuse-residual,fuse-norm,fuse-rope,fuse-attention,fuse-swiglu,fuse-argmax,decompose,infer-deps,"
    "assign-sm{policy=critical-path}";

// The fusions of the default pipeline, and the default pipeline with another assign-sm
// policy (and decompose options, and a cost file for assign-sm to plan with: `costs`
// "" for the machine model's). Throws mpk::Error for a cost file path that cannot be an
// option value.
inline constexpr const char* kDefaultFusions =
    "fuse-residual,fuse-norm,fuse-rope,fuse-attention,fuse-swiglu,fuse-argmax";
std::string default_pipeline_with(const std::string& policy, const std::string& decompose = "decompose",
                                  const std::string& costs = "");

}  // namespace mpk
