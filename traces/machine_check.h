// Checks of the machine model and of real-valued cost settings: a machine model comes from a
// module file or a trace.db, cost settings from a cost file, and all are untrusted. A NaN, an
// infinity, a negative latency or a bandwidth that makes every time overflow is refused with a
// message naming the field and its bounds (traces/trace_limits.h).
#pragma once

#include <string>

#include "ir/module.h"

namespace mpk {

// v, if it is a finite number in lo..hi; else an Error "WHAT must be in LO..HI, got V".
double checked_real(double v, double lo, double hi, const std::string& what);

// Every field of `m` within its bounds; errors start with `where`.
void check_machine_model(const MachineModel& m, const std::string& where);

}  // namespace mpk
