// The search space of `mpk tune` (docs/tune.md), built from what the passes and policies
// declare (passes/options.h), not from a list kept here: every pass of the default
// pipeline's typed options, each fusion's presence, the assign-sm policy (every policy
// without a base) and each policy's own options (searched only under that policy).
// Values: a flag's two, a choice's choices, "auto" where an option computes its default,
// and for numbers a ladder: integers on powers of two from the declared minimum to the
// declared maximum (4096 where none is declared), each value tried once and dropped when
// its pass refuses it or when it makes more than 4x the default's tasks; reals on a
// geometric ladder between their bounds (from 0: 0, then three decades below the
// maximum). Text options (file paths), reals whose default is computed (a latency from
// the cost model: their bounds are sanity limits, not a scale) and reals whose bounds span
// more than six decades are left at their defaults, with a note.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "driver/tune_compile.h"
#include "passes/pass.h"
#include "passes/pipeline.h"

namespace mpk {

struct TuneDimension {
  std::string pass;    // the pipeline entry it sets: "fuse-norm", "decompose", "assign-sm"
  std::string option;  // "" for the pass's presence (values "on", "off")
  std::string policy;  // an option of this policy only ("" for the others)
  OptionKind kind = OptionKind::kString;
  std::vector<std::string> values;
  size_t default_index = 0;
  size_t ladder_begin = 0;  // values[ladder_begin..] are ordered (neighbours are close)
  bool ordered() const { return ladder_begin + 1 < values.size(); }
  std::string name() const;  // "decompose.tile", "fuse-norm", "assign-sm.slack-scale"
};

struct TuneSpace {
  Pipeline base;                     // the pipeline the search starts from
  std::vector<TuneDimension> dims;
  std::vector<std::string> notes;    // options left at their defaults, and why
  int64_t default_tasks = 0;         // tasks of the base pipeline
};

// One candidate: a value index per dimension.
using TunePoint = std::vector<int32_t>;

TunePoint default_point(const TuneSpace& space);
// Whether dimension `d` matters at `p`: a policy's option under that policy, a fusion's
// option while the fusion runs.
bool dimension_active(const TuneSpace& space, const TunePoint& p, size_t d);
Pipeline pipeline_of(const TuneSpace& space, const TunePoint& p);
// The active settings that differ from the default: "decompose.tile=32 assign-sm.policy=wave";
// "default" when none does.
std::string describe_point(const TuneSpace& space, const TunePoint& p);

// Builds the space around `base` (a pipeline of registered passes), trying the integer
// values with `compiler`, and sets its task limit to 4x the default's (a combination of
// values may make more tasks than each alone). Throws mpk::Error when the base pipeline
// does not compile.
TuneSpace build_tune_space(TuneCompiler& compiler, const Pipeline& base);

}  // namespace mpk
