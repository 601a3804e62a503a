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

// The default pipeline, run by mpk-opt when no --pass-pipeline is given.
inline constexpr const char* kDefaultPipeline =
    "decompose,infer-deps,assign-sm{policy=critical-path}";

}  // namespace mpk
