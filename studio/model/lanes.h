// The timeline's two lanes under the ruler, without ImGui. The busy-SM strip (a minimap
// of the whole run): per column, the share of workers busy, from the union of each
// worker's busy time. The bandwidth lane (on the window's axis): per column, the bytes
// the executions stream per ns (each execution's task bytes spread evenly over its
// time), against the floor, the device's memory bandwidth, so that latency-bound phases
// (far under it) and streaming ones (near it) show. Both read the model's coarse picture
// when a column spans a cell or more, else the executions in the window: the cost
// follows the screen.
#pragma once

#include <vector>

#include "studio/model/timeline_layout.h"
#include "studio/model/trace_model.h"

namespace mpk::studio {

// `columns` values in [0, 1] across the whole run [0, duration).
std::vector<float> busy_strip(const TraceModel& m, int columns);
// Bytes per ns (GB/s) in each of `columns` columns of `axis` (1 pixel each).
std::vector<float> bandwidth_lane(const TraceModel& m, const TimeAxis& axis, int columns);
// The device's memory bandwidth in bytes per ns (GB/s); 0 when the trace does not say.
double bandwidth_floor(const TraceModel& m);

}  // namespace mpk::studio
