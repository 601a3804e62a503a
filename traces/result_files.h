// The files `mpk experiment` and `mpk tune` write beside their trace.db: one row per run
// or candidate, as CSV, as JSON and as an SVG plot of makespan per step per row, predicted
// (the simulator) and measured (the GPU) where each exists (docs/tune.md, "Outputs").
// The SVG is written by hand: no plotting dependency.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mpk {

struct ResultRow {
  std::string label;    // "3" or "candidate 12"
  std::string group;    // rows of one group share a colour (e.g. the model)
  std::string name;     // e.g. the policy
  std::string options;  // the settings that set this row apart, "decompose.tile=32 ..."
  std::string pipeline;
  double predicted_ns = -1;  // makespan per step; < 0: none
  double measured_ns = -1;
  int64_t run = 0;           // its run in trace.db; 0: none
  std::string note;          // "default", "best", "finalist", an error
};

// CSV with a header line; fields quoted where they hold commas, quotes or newlines.
std::string results_csv(const std::vector<ResultRow>& rows);
// {"title": ..., "rows": [{...}, ...]}.
std::string results_json(const std::string& title, const std::vector<ResultRow>& rows);
// One column per row, in order: a dot for the predicted and a diamond for the measured
// makespan per step (ms), a dashed line at the first row marked "default" in `note`, row
// labels along the x axis, one colour per group with a legend.
std::string results_svg(const std::string& title, const std::vector<ResultRow>& rows);

// Writes PREFIX.csv, PREFIX.json and PREFIX.svg (each whole or not at all); returns
// the three paths. Throws mpk::Error naming a file that cannot be written.
std::vector<std::string> write_result_files(const std::string& prefix, const std::string& title,
                                            const std::vector<ResultRow>& rows);

}  // namespace mpk
