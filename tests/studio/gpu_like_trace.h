// A GPU-shaped trace from a simulated one, for the studio's tests and frame benchmark:
// the megakernel runs adjacent linear tasks of one layer over the same input (q/k/v,
// gate/up) as one unit and records each member with the unit's start and end, and the
// hardware places workers on SMs as it likes. Here, on each worker and step, runs of
// consecutive executions of one layer's q/k/v projections, or of its gate/up projections
// (different operators over the same input), become one group spanning them, and worker w
// runs on SM workers - 1 - w.
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
  // 1: q/k/v, 2: gate/up, 0: neither (by the operator's name after its layer).
  const auto family = [](const Operator& op) {
    const std::string n = op.name.substr(op.name.find('.') + 1);
    return n == "q_proj" || n == "k_proj" || n == "v_proj" ? 1 : n == "gate_proj" || n == "up_proj" ? 2 : 0;
  };
  for (size_t i = 0; i < execs.size();) {
    size_t j = i + 1;
    const Operator& lead = op_of(execs[i]);
    if (lead.kind == OpKind::kLinear && family(lead) > 0)
      while (j < execs.size() && execs[j].worker == execs[i].worker && execs[j].step == execs[i].step &&
             family(op_of(execs[j])) == family(lead) && op_of(execs[j]).layer == lead.layer &&
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
