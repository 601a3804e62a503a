// Machine-model and real-value checks.
#include "ir/machine_check.h"

#include <cmath>
#include <cstdio>

#include "ir/checked.h"
#include "ir/error.h"

namespace mpk {

double checked_real(double v, double lo, double hi, const std::string& what) {
  if (!std::isfinite(v) || v < lo || v > hi) {
    char buf[128];
    std::snprintf(buf, sizeof buf, " must be in %g..%g, got %g", lo, hi, v);
    throw Error(what + buf);
  }
  return v;
}

void check_machine_model(const MachineModel& m, const std::string& where) {
  const std::string w = where + ": ";
  checked_range(m.sm_count, 1, kMaxSmCount, w + "sm_count");
  checked_range(m.smem_per_sm, 0, kMaxSmemPerSm, w + "smem_per_sm");
  checked_real(m.mem_bandwidth, kMinBandwidth, kMaxBandwidth, w + "mem_bandwidth (bytes/s)");
  checked_real(m.clock_ghz, 0, static_cast<double>(kMaxClockKhz) * 1e-6, w + "clock_ghz");
  checked_real(m.event_latency_ns, 0, kMaxCostNs, w + "event_latency_ns");
  checked_real(m.task_overhead_ns, 0, kMaxCostNs, w + "task_overhead_ns");
}

}  // namespace mpk
