// `mpk trace path`: the critical path of a run cut into segments (each node's execution
// and the wait before it: a dependency hop or a same-SM gap), per step, or per decoder
// layer averaged over (step, layer) instances. The walk is traces/critical_path.h.
//
// Per step: from the step's last-ending execution back to the step's start.
// Per layer L: from the last-ending execution of layer L (the operators' `layer`) back
// to the first node of an earlier layer (the boundary, not counted; normally layer
// L-1's), never before the step's start. Outside the layers: the path from the step's
// start into the last layer-less node before the first layer (the embedding), and the
// path from the last layer's end to the step's end (final norm, LM head, argmax).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "traces/trace_db.h"

namespace mpk {

enum class SegmentKind : uint8_t {
  kRun,     // "run A": a node's execution
  kHop,     // "hop A -> B": B waited for an event that A released last
  kSameSm,  // "same-SM gap A -> B": B waited for A, the task before it on its worker
  kStart,   // "start -> B": B had nothing before it (the run's first tasks)
};
const char* name_of(SegmentKind k);

struct Segment {
  SegmentKind kind = SegmentKind::kRun;
  std::string label;  // "hop L3.down_proj -> L4.q_proj+L4.k_proj", "run L4.q_proj+L4.k_proj"
  int64_t ns = 0;
};

// One walk: segments in path order; their ns sum to length_ns.
struct PathInstance {
  int32_t step = 0;
  int32_t layer = -1;       // -1: a whole step, or the part outside the layers
  int64_t length_ns = 0;
  int64_t period_ns = 0;    // a layer: last end of L - last end of L-1; else the step's makespan
  int64_t nodes = 0, hops = 0, same_sm = 0;
  bool cycle = false;       // the walk met a node already on the path (an edited trace)
  std::vector<Segment> segments;
};

// A segment's mean over instances (absent: 0), so that the means sum to the mean length.
struct SegmentMean {
  std::string label;
  SegmentKind kind = SegmentKind::kRun;
  double mean_ns = 0;
  int64_t instances = 0;  // instances the segment occurred in
  double position = 0;    // mean share of the path elapsed at its first occurrence
};

// Instances' segments by label (a label repeated within an instance is summed), in
// path order: by mean position, then mean index along the path.
struct PathMean {
  int64_t instances = 0;
  double length_ns = 0;  // mean
  double period_ns = 0;  // mean
  std::vector<SegmentMean> segments;
};
PathMean mean_path(const std::vector<PathInstance>& instances);

struct PathSplitOptions {
  // Steps first..last; none: every step but the first (step 0 when there is one).
  std::optional<std::pair<int64_t, int64_t>> steps;
  bool layers = false;
};

struct PathSplit {
  RunRecord run;
  int32_t first_step = 0, last_step = 0;
  std::vector<PathInstance> steps;  // !layers: one per step
  // layers: one instance per (step, layer) for layers 1..num_layers-1, step-major.
  int32_t num_layers = 0;
  std::vector<PathInstance> layers;
  PathMean layer_mean;
  std::vector<PathInstance> outside;  // one per step: into the first layer, then after the last
  PathMean outside_mean;
};

// Throws mpk::Error for an unknown run, a step outside the run, or (layers) a graph
// with fewer than two decoder layers.
PathSplit compute_path_split(const TraceReader& reader, int64_t run, const PathSplitOptions& o);

// Aligned tables, µs with 2 decimals. `top` > 0: per table, only the `top` longest
// segments (in path order) and one line for the rest.
std::string format_path_split(const PathSplit& s, int top);
// The same rows as CSV with the columns
// section,step,layer,position,kind,segment,us,share,instances,of
std::string format_path_split_csv(const PathSplit& s, int top);

}  // namespace mpk
