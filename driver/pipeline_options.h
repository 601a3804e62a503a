// What a front end needs to show and edit a pass pipeline as widgets (mpk-studio's
// pipeline view): the text grammar (parse_pipeline, print_pipeline, PipelineEntry), the
// declared option schema of every pass and policy (PassOptionInfo, OptionKind,
// option_value_problem), and which options one entry takes. The grammar and the schema
// are the compiler's vocabulary (passes/pipeline.h, passes/pass.h); front ends reach them
// here, never through the pass manager, the registry or the policies themselves.
#pragma once

#include <string>
#include <vector>

#include "passes/pass.h"
#include "passes/pipeline.h"

namespace mpk {

// The options an entry's widgets show: the pass's own; for assign-sm its `policy` and
// `workers` and the chosen policy's (and its base policy's) options. Empty for an
// unknown pass.
std::vector<PassOptionInfo> entry_options(const PipelineEntry& entry);

}  // namespace mpk
