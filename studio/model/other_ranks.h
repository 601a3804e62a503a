// The other ranks of a tensor-parallel launch (docs/trace-schema.md "Ranks"): the timeline
// shows them under the opened run's rows, on the opened run's time axis. Each is an
// ordinary run loaded as a TraceModel, with the shift that places its times on that axis
// (its rank_offset_ns less the opened run's). Their rows are read-only: hovering explains,
// nothing is selected or edited there; opening one from the run list makes it interactive.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "studio/model/trace_model.h"
#include "traces/trace_db.h"

namespace mpk::studio {

struct OtherRank {
  std::unique_ptr<TraceModel> model;
  int64_t shift_ns = 0;  // its time t is drawn at t + shift_ns on the opened run's axis
  const RunRecord& run() const { return model->run(); }
};

// The runs of `opened`'s launch other than `opened`, in rank order, each loaded; empty for a
// single-rank run. Throws mpk::Error when the launch's rows disagree (TraceReader::rank_runs)
// or a rank's run cannot be loaded.
std::vector<OtherRank> load_other_ranks(const TraceReader& reader, const RunRecord& opened);

// The id of the launch a run belongs to: its rank 0's run.
int64_t launch_of(const RunRecord& r);

// A rank's group title: "rank 1 (GPU 1)" (the GPU a rank ran on is its rank), "rank 1 (CPU
// engine 1)", else "rank 1".
std::string rank_title(const RunRecord& r);
// A worker row of another rank: "r1 w0 SM 12".
std::string rank_row_label(const OtherRank& r, int32_t worker);
// The first line of its hover texts: "rank 1 (GPU 1), run 6: its times +1.250 us on this
// axis" (the times that follow are on the opened run's axis).
std::string rank_caption(const OtherRank& r);

}  // namespace mpk::studio
