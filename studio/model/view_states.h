// The own state of the statistics, compare and graph views (studio/panel_stats.cc,
// panel_compare.cc, panel_graph.cc), held in StudioState: each view's headless model,
// rebuilt when what it shows changes, its UI choices, and the geometry of the last
// frame so that tests can find what is drawn where.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "studio/model/compare_model.h"
#include "studio/model/graph_model.h"
#include "studio/model/stats_model.h"

namespace mpk::studio {

struct StatsViewState {
  std::shared_ptr<StatsModel> model;  // of `run` in `trace_path`
  std::string trace_path;
  int64_t run = -1;
  StatsGrouping grouping = StatsGrouping::kKind;
  std::string histogram_row;           // "" = the first row
  int histogram_bins = 40;
  // Last frame: the centre of each column's header and of each row, and the
  // histogram's bars.
  std::array<float, kNumStatsColumns> header_x{};
  float header_y = 0;
  std::vector<float> row_y;
  float histogram_x0 = 0, histogram_x1 = 0, histogram_y0 = 0, histogram_y1 = 0;
};

struct CompareViewState {
  std::shared_ptr<CompareModel> model;  // s.run against `run_b`
  std::string trace_path;
  int64_t run_a = -1, run_b = -1;
  std::string error;                    // why the model could not be built
  bool drag_active = false;
  // Last frame: the canvas, task boxes drawn for both runs (merged ones once), and per
  // run (A, B) and step the busy time the drawn boxes and busy columns stand for.
  float canvas_x0 = 0, canvas_y0 = 0, canvas_width = 0, canvas_height = 0;
  int64_t boxes_drawn = 0;
  std::array<std::vector<double>, 2> step_busy_drawn;
};

struct GraphViewState {
  std::shared_ptr<GraphModel> layouts;  // of `trace_path`
  std::string trace_path;
  GraphMode mode = GraphMode::kOps;
  std::vector<int32_t> expanded;        // layers shown as tasks, sorted
  const GraphLayout* shown = nullptr;   // what is drawn (the last finished layout)
  bool pending = false;                 // a layout for the current choice is running
  std::string error;
  int32_t selected = -1;                // node index in `shown`
  int32_t hovered = -1;
  // View transform: screen = origin + scale * (graph point); refit on a new layout.
  float origin_x = 0, origin_y = 0, scale = 1;
  bool fit_pending = true;
  bool drag_active = false;
  float canvas_x0 = 0, canvas_y0 = 0, canvas_width = 0, canvas_height = 0;
  int64_t nodes_drawn = 0;
};

}  // namespace mpk::studio
