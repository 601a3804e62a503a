// Analytic task cost estimate.
#include "ir/cost_model.h"

#include <algorithm>

namespace mpk {

double estimate_task_ns(const Task& t, const MachineModel& m) {
  const double sms = std::max(1, m.sm_count);
  const double bytes_per_ns = m.mem_bandwidth / sms * 1e-9;
  // 128 FP32 lanes per SM, one FMA (2 flops) per lane per cycle.
  const double flops_per_ns = 256.0 * m.clock_ghz;
  const double mem_ns = static_cast<double>(t.bytes) / bytes_per_ns;
  const double math_ns = static_cast<double>(t.flops) / flops_per_ns;
  return m.task_overhead_ns + std::max(mem_ns, math_ns);
}

}  // namespace mpk
