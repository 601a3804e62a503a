// Checks of the machine model and of real-valued cost settings: a machine model comes from a
// module file or a trace.db, cost settings from a cost file, and all are untrusted. A NaN, an
// infinity, a negative latency or a bandwidth that makes every time overflow is refused with a
// message naming the field and its bounds (below; traces/trace_limits.h adds a trace's).
#pragma once

#include <cstdint>
#include <string>

#include "ir/module.h"

namespace mpk {

// SMs of a machine (an H100 has 132, a B200 148).
inline constexpr int64_t kMaxSmCount = 4096;
// Clock, memory bandwidth, shared memory per SM.
inline constexpr int64_t kMaxClockKhz = 100'000'000;  // 100 GHz
inline constexpr double kMinBandwidth = 1e3;          // bytes/s; slower is a typo
inline constexpr double kMaxBandwidth = 1e15;         // bytes/s (an H100 has 3.35e12)
inline constexpr int64_t kMaxSmemPerSm = int64_t{1} << 30;
// Cost-model times (event latency, dispatch gap, per-task fixed time): one second.
inline constexpr double kMaxCostNs = 1e9;
// Per-kind factors of the cost model: a task kind's bytes factor and one SM's arithmetic
// rate (flops per ns; an H100 SM does about 8e3 bf16 flops per ns).
inline constexpr double kMaxBytesScale = 1e6;
inline constexpr double kMaxFlopsPerNs = 1e9;

// v, if it is a finite number in lo..hi; else an Error "WHAT must be in LO..HI, got V".
double checked_real(double v, double lo, double hi, const std::string& what);

// Every field of `m` within its bounds; errors start with `where`.
void check_machine_model(const MachineModel& m, const std::string& where);

}  // namespace mpk
