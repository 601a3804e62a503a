// Export of a stored run as Chrome trace event JSON (opens in Perfetto and
// chrome://tracing): one track per worker plus a track of steps, named and ordered by
// metadata events; each task execution is a slice named after its operator with task,
// operator, layer, step and wait in its args; flow arrows link a task to the
// producers whose releases it waited for.
#pragma once

#include <cstdint>
#include <ostream>

#include "traces/trace_db.h"

namespace mpk {

enum class FlowMode : uint8_t {
  kNone,
  kLast,  // one arrow per execution: from the producer it waited for last
  kAll,   // every dependency of every execution (large for big graphs)
};

struct ChromeExportOptions {
  FlowMode flows = FlowMode::kLast;
  int64_t first_step = 0;  // export steps first_step..last_step only
  int64_t last_step = -1;  // -1: through the last step
  // And only what overlaps the time range [t0_ns, t1_ns) (ns from the run's start; t1_ns
  // -1: to the end): executions, steps, and arrows whose both ends are kept.
  int64_t t0_ns = 0;
  int64_t t1_ns = -1;
};

struct ChromeExportStats {
  int64_t slices = 0, flows = 0;
};

// Throws mpk::Error for an unknown run or steps the run does not have.
ChromeExportStats export_chrome_trace(const TraceReader& reader, int64_t run, std::ostream& out,
                                      const ChromeExportOptions& options = {});

}  // namespace mpk
