// A GPU-shaped trace from a simulated one, for the studio's tests and frame benchmark:
// the megakernel runs adjacent linear tasks of one layer over the same input (q/k/v,
// gate/up) as one unit and records each member with the unit's start and end, and the
// hardware places workers on SMs as it likes. Here, on each worker and step, runs of up to
// three consecutive linear executions of different operators of one layer become one
// group spanning them, and worker w runs on SM workers - 1 - w.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "ir/module.h"
#include "traces/trace_db.h"

namespace mpk::testing {

inline std::vector<Execution> gpu_like(const Module& m, std::vector<Execution> execs, int32_t workers) {
  std::sort(execs.begin(), execs.end(), [](const Execution& a, const Execution& b) {
    return a.worker != b.worker ? a.worker < b.worker : a.start_ns < b.start_ns;
  });
  const auto op_of = [&](const Execution& e) -> const Operator& {
    return m.program.ops[static_cast<size_t>(m.graph.tasks[static_cast<size_t>(e.task)].op)];
  };
  for (size_t i = 0; i < execs.size();) {
    size_t j = i + 1;
    const Operator& lead = op_of(execs[i]);
    if (lead.kind == OpKind::kLinear && lead.layer >= 0)
      while (j < execs.size() && j - i < 3 && execs[j].worker == execs[i].worker && execs[j].step == execs[i].step &&
             op_of(execs[j]).kind == OpKind::kLinear && op_of(execs[j]).layer == lead.layer &&
             op_of(execs[j]).name != op_of(execs[j - 1]).name)
        ++j;
    for (size_t k = i + 1; k < j; ++k) {  // the group runs from its first start to its last end
      execs[k].start_ns = execs[i].start_ns;
      execs[k].wait_begin_ns = std::min(execs[k].wait_begin_ns, execs[i].start_ns);
    }
    for (size_t k = i; k + 1 < j; ++k) execs[k].end_ns = execs[j - 1].end_ns;
    i = j;
  }
  for (Execution& e : execs) e.sm = workers - 1 - e.worker;
  return execs;
}

}  // namespace mpk::testing
