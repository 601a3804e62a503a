// The cost model: per-kind parameters, defaults from the machine model, one task's
// cost and the planning estimate.
#include "ir/cost_params.h"

#include <algorithm>

#include "ir/machine_check.h"
#include "ir/ops/tensor_parallel.h"
#include "ir/verifier.h"

namespace mpk {

KindCost CostParams::cost_of(TaskKind k) const {
  KindCost c = defaults;
  const KindCostOverride& o = kinds[static_cast<size_t>(k)];
  if (o.fixed_ns) c.fixed_ns = *o.fixed_ns;
  if (o.bytes_scale) c.bytes_scale = *o.bytes_scale;
  if (o.flops_per_ns) c.flops_per_ns = *o.flops_per_ns;
  if (o.prefetch) c.prefetch = *o.prefetch;
  return c;
}

CostParams CostParams::from_machine(const MachineModel& m) {
  check_machine_model(m, "machine model '" + m.name + "'");
  CostParams p;
  p.mem_bandwidth = m.mem_bandwidth;
  p.sm_bandwidth = 3.0 * m.mem_bandwidth / std::max(1, m.sm_count);
  p.event_latency_ns = m.event_latency_ns;
  p.dispatch_ns = 0;
  p.defaults.fixed_ns = m.task_overhead_ns;
  p.defaults.bytes_scale = 1.0;
  // NVLink 4: 450 GB/s each way per GPU; mpk calibrate fitted the latency beyond a local
  // release at 1.98 to 2.03 us from tp 2 and 4 traces on 4 H200s (docs/benchmarks.md).
  p.link_latency_ns = 2000;
  p.link_bandwidth = 4.5e11;
  p.defaults.flops_per_ns = 256.0 * m.clock_ghz;
  for (int k = 0; k < kNumTaskKinds; ++k)  // ir/kinds.def: the kinds that stream their weights
    if (streams_weights(static_cast<TaskKind>(k))) p.kinds[k].prefetch = 1.0;
  return p;
}

TaskCost task_cost(const CostParams& c, const Task& t) {
  const KindCost k = c.cost_of(t.kind);
  TaskCost out;
  out.fixed_ns = k.fixed_ns;
  out.compute_ns = k.flops_per_ns > 0 ? static_cast<double>(t.flops) / k.flops_per_ns : 0;
  const double bytes = static_cast<double>(t.bytes) * k.bytes_scale;
  out.stream_bytes = c.prefetch_bytes > 0 ? bytes * std::clamp(k.prefetch, 0.0, 1.0) : 0;
  out.direct_bytes = bytes - out.stream_bytes;
  return out;
}

TaskCost task_cost(const CostParams& c, const Module& m, const Task& t) {
  TaskCost out = task_cost(c, t);
  if (t.kind == TaskKind::kAllReduce && t.reads.size() == 2 && c.link_bandwidth > 0) {  // the peers' partials
    const Region& part = t.reads[1];
    if (part.tensor >= 0 && static_cast<size_t>(part.tensor) < m.program.tensors.size()) {
      const double bytes = static_cast<double>(part.volume() * size_of(m.program.tensors[part.tensor].dtype));
      out.compute_ns += bytes * static_cast<double>(tp_ranks(m) - 1) / c.link_bandwidth * 1e9;
    }
  }
  if (!c.positional_cache) return out;
  const auto& tensors = m.program.tensors;
  double bytes = 0;
  int64_t lo = 0, hi = 0;
  for (const Region& r : t.reads) {
    if (r.tensor < 0 || static_cast<size_t>(r.tensor) >= tensors.size()) continue;
    const Tensor& x = tensors[static_cast<size_t>(r.tensor)];
    if (x.role != TensorRole::kKvCache || r.dims.size() < 2) continue;
    if (bytes == 0 || r.dims[1].lo < lo) lo = r.dims[1].lo;
    if (bytes == 0 || r.dims[1].hi > hi) hi = r.dims[1].hi;
    bytes += static_cast<double>(r.volume() * size_of(x.dtype));
  }
  const double scale = c.cost_of(t.kind).bytes_scale;
  out.cache_bytes = std::min(out.direct_bytes, bytes * scale);
  out.cache_lo = lo;
  out.cache_hi = hi;
  return out;
}

double estimate_task_ns(const CostParams& c, const Task& t, int32_t sm_count) {
  // The operations in this order (fair share, then ns) keep the schedules made before
  // the policies shared this model bit for bit (the GPU's figures depend on them).
  const double sms = std::max(1, sm_count);
  const double bytes_per_ns = std::min(c.mem_bandwidth / sms, c.sm_bandwidth) * 1e-9;
  const KindCost k = c.cost_of(t.kind);
  const double mem_ns = static_cast<double>(t.bytes) * k.bytes_scale / bytes_per_ns;
  const double math_ns = k.flops_per_ns > 0 ? static_cast<double>(t.flops) / k.flops_per_ns : 0;
  return k.fixed_ns + std::max(mem_ns, math_ns) + c.dispatch_ns;
}

namespace {

void check_kind(const KindCost& k, const std::string& where) {
  checked_real(k.fixed_ns, 0, kMaxCostNs, where + ".fixed_ns");
  checked_real(k.bytes_scale, 0, kMaxBytesScale, where + ".bytes_scale");
  checked_real(k.flops_per_ns, 0, kMaxFlopsPerNs, where + ".flops_per_ns");
  checked_real(k.prefetch, 0, 1, where + ".prefetch");
}

}  // namespace

void check_cost_params(const CostParams& p, const std::string& source) {
  const std::string w = source + ": ";
  checked_real(p.mem_bandwidth, kMinBandwidth, kMaxBandwidth, w + "mem_bandwidth (bytes/s)");
  checked_real(p.sm_bandwidth, kMinBandwidth, kMaxBandwidth, w + "sm_bandwidth (bytes/s)");
  checked_real(p.event_latency_ns, 0, kMaxCostNs, w + "event_latency_ns");
  checked_real(p.dispatch_ns, 0, kMaxCostNs, w + "dispatch_ns");
  checked_real(p.trigger_ns, 0, kMaxCostNs, w + "trigger_ns");
  checked_real(p.fanout_ns, 0, kMaxCostNs, w + "fanout_ns");
  checked_real(p.step_ns, 0, kMaxCostNs, w + "step_ns");
  checked_real(p.link_latency_ns, 0, kMaxCostNs, w + "link_latency_ns");
  checked_real(p.link_bandwidth, 0, kMaxBandwidth, w + "link_bandwidth (bytes/s, 0: one GPU)");
  checked_real(p.prefetch_bytes, 0, static_cast<double>(kMaxTaskBytes), w + "prefetch_bytes");
  check_kind(p.defaults, w + "default");
  for (int k = 0; k < kNumTaskKinds; ++k)
    check_kind(p.cost_of(static_cast<TaskKind>(k)), w + "kinds." + std::string(name_of(static_cast<TaskKind>(k))));
}

}  // namespace mpk
