// zig-zag: the task id order dealt over the workers back and forth, 0, 1, ..., W-1,
// W-1, ..., 1, 0, 0, 1, ..., as Hazy Research's megakernel scheduler does (its "zz"
// mode): consecutive tasks land on neighbouring workers, and a worker that took the last
// task of one sweep takes the first of the next, which evens out the load round-robin
// leaves when an operator's task count is not a multiple of W. Each list is in task id
// order, so it is deadlock-free when task ids follow the dependencies (as after
// infer-deps).
#include "passes/policies/policy.h"

namespace mpk {
namespace {

PolicyInfo zig_zag_policy_info() {
  PolicyInfo info;
  info.name = "zig-zag";
  info.summary = "task id order dealt over the workers back and forth (Hazy's zig-zag)";
  info.configure = [](const PassOptions&) -> ScheduleFn {
    return [](const ScheduleRequest& r) {
      PolicyOutput out;
      out.workers.resize(r.workers);
      const size_t w = static_cast<size_t>(r.workers);
      for (size_t t = 0; t < r.graph.tasks.size(); ++t) {
        const size_t sweep = t / w, at = t % w;
        out.workers[sweep % 2 == 0 ? at : w - 1 - at].push_back(static_cast<TaskId>(t));
      }
      return out;
    };
  };
  return info;
}

}  // namespace

MPK_POLICY(zig_zag_policy_info);

}  // namespace mpk
