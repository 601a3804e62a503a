// Per-worker busy share, idle time by cause and blamed producers (studio/model/worker_model.h).
#include "studio/model/worker_model.h"

#include <algorithm>
#include <map>

namespace mpk::studio {

std::vector<WorkerRow> worker_rows(const TraceModel& m, int64_t t0, int64_t t1) {
  if (t1 <= t0) t0 = 0, t1 = m.duration_ns();
  const double length = static_cast<double>(std::max<int64_t>(t1 - t0, 1));
  const CriticalPathWalker& walker = m.walker();
  std::vector<WorkerRow> rows;
  for (int32_t w = 0; w < m.num_workers(); ++w) {
    WorkerRow r;
    r.worker = w;
    r.sm = m.sm_of(w);
    r.busy_ns = m.busy_ns(w, t0, t1);
    r.busy = static_cast<double>(r.busy_ns) / length;
    std::map<std::string, int64_t> blamed;
    const IndexRange br = m.bubbles_in(w, t0, t1);
    for (int64_t i = br.begin; i < br.end; ++i) {
      const Bubble& b = m.bubbles(w)[static_cast<size_t>(i)];
      const int64_t d = std::min(b.end_ns, t1) - std::max(b.start_ns, t0);
      if (d <= 0) continue;
      r.idle_ns[static_cast<size_t>(b.cause) % 4] += d;
      if (b.cause != BubbleCause::kWait || b.producer < 0) continue;
      const int32_t dist = b.event >= 0 ? m.graph().graph.events[static_cast<size_t>(b.event)].step_distance : 0;
      const int64_t p = m.find(b.producer, b.step - dist);
      blamed[p >= 0 ? walker.name_of(walker.node_of(p), true) : m.op_of(b.producer).name] += d;
    }
    for (const auto& [name, ns] : blamed) r.blamed.push_back({name, ns});
    std::sort(r.blamed.begin(), r.blamed.end(),
              [](const BlamedProducer& a, const BlamedProducer& b) { return a.wait_ns > b.wait_ns; });
    if (r.blamed.size() > 3) r.blamed.resize(3);
    rows.push_back(std::move(r));
  }
  return rows;
}

void sort_worker_rows(std::vector<WorkerRow>& rows, WorkerColumn column, bool ascending) {
  const auto key = [column](const WorkerRow& r) -> double {
    switch (column) {
      case WorkerColumn::kWorker: return r.worker;
      case WorkerColumn::kSm: return r.sm;
      case WorkerColumn::kBusy: return r.busy;
      case WorkerColumn::kWait: return static_cast<double>(r.idle_ns[0]);
      case WorkerColumn::kQueueEmpty: return static_cast<double>(r.idle_ns[1]);
      case WorkerColumn::kStepTail: return static_cast<double>(r.idle_ns[2]);
      case WorkerColumn::kOverhead: return static_cast<double>(r.idle_ns[3]);
      case WorkerColumn::kBlamed: return r.blamed.empty() ? 0.0 : static_cast<double>(r.blamed.front().wait_ns);
    }
    return 0;
  };
  std::stable_sort(rows.begin(), rows.end(), [&](const WorkerRow& a, const WorkerRow& b) {
    return ascending ? key(a) < key(b) : key(b) < key(a);
  });
}

}  // namespace mpk::studio
