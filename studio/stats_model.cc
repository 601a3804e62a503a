// Per-kind statistics of a run over a time range, and duration histograms.
#include "studio/stats_model.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace mpk::studio {

int64_t nearest_rank(const std::vector<int64_t>& sorted, double q) {
  if (sorted.empty()) return 0;
  const double rank = std::ceil(q * static_cast<double>(sorted.size()));
  const size_t i = static_cast<size_t>(std::clamp(rank, 1.0, static_cast<double>(sorted.size())));
  return sorted[i - 1];
}

StatsModel::StatsModel(const TraceReader& reader, int64_t run) : run_(run) {
  const RunRecord r = reader.run(run);
  duration_ns_ = r.duration_ns;
  num_workers_ = r.num_workers;

  std::map<std::string, int32_t> kind_index;
  std::vector<int32_t> op_kind;
  for (const OperatorRecord& o : reader.operators(r.graph)) {
    auto [it, fresh] = kind_index.emplace(o.kind, static_cast<int32_t>(kinds_.size()));
    if (fresh) kinds_.push_back(o.kind);
    if (o.id >= static_cast<OpId>(op_kind.size())) op_kind.resize(static_cast<size_t>(o.id) + 1, -1);
    op_kind[static_cast<size_t>(o.id)] = it->second;
  }
  std::vector<int32_t> task_kind;
  for (const TaskRecord& t : reader.tasks(r.graph)) {
    if (t.id >= static_cast<TaskId>(task_kind.size())) task_kind.resize(static_cast<size_t>(t.id) + 1, -1);
    task_kind[static_cast<size_t>(t.id)] =
        t.op >= 0 && static_cast<size_t>(t.op) < op_kind.size() ? op_kind[static_cast<size_t>(t.op)] : -1;
  }

  // Executions come ordered by (worker, start): the previous entry of the same worker
  // is the one that ran right before.
  const std::vector<ExecutionRecord> execs = reader.executions(run);
  samples_.reserve(execs.size());
  for (size_t i = 0; i < execs.size(); ++i) {
    const ExecutionRecord& e = execs[i];
    // The members of a linear group share one interval on one worker: one execution.
    if (i > 0 && execs[i - 1].worker == e.worker && execs[i - 1].start_ns == e.start_ns &&
        execs[i - 1].end_ns == e.end_ns)
      continue;
    const int64_t free_at = i > 0 && execs[i - 1].worker == e.worker ? execs[i - 1].end_ns : 0;
    const int32_t kind = static_cast<size_t>(e.task) < task_kind.size() ? task_kind[e.task] : -1;
    if (kind < 0) continue;
    samples_.push_back({e.start_ns, e.end_ns - e.start_ns, std::max<int64_t>(0, e.start_ns - free_at), kind});
  }
  std::stable_sort(samples_.begin(), samples_.end(),
                   [](const Sample& a, const Sample& b) { return a.start_ns < b.start_ns; });
  set_range(0, 0);
}

void StatsModel::set_range(int64_t t0, int64_t t1) {
  whole_ = t1 <= t0;
  t0_ = whole_ ? 0 : t0;
  t1_ = whole_ ? duration_ns_ : t1;
  recompute();
}

void StatsModel::recompute() {
  auto first = std::lower_bound(samples_.begin(), samples_.end(), t0_,
                                [](const Sample& s, int64_t t) { return s.start_ns < t; });
  auto last = whole_ ? samples_.end()
                     : std::lower_bound(first, samples_.end(), t1_,
                                        [](const Sample& s, int64_t t) { return s.start_ns < t; });
  std::vector<std::vector<int64_t>> durations(kinds_.size());
  std::vector<int64_t> gaps(kinds_.size(), 0);
  for (auto it = first; it != last; ++it) {
    durations[static_cast<size_t>(it->kind)].push_back(it->duration_ns);
    gaps[static_cast<size_t>(it->kind)] += it->gap_ns;
  }
  const int64_t length = whole_ ? duration_ns_ : t1_ - t0_;
  capacity_ns_ = static_cast<int64_t>(num_workers_) * length;
  rows_.clear();
  total_count_ = total_busy_ns_ = total_bubble_ns_ = 0;
  for (size_t k = 0; k < kinds_.size(); ++k) {
    std::vector<int64_t>& d = durations[k];
    if (d.empty()) continue;
    std::sort(d.begin(), d.end());
    KindRow row;
    row.kind = kinds_[k];
    row.count = static_cast<int64_t>(d.size());
    for (int64_t v : d) row.total_ns += v;
    row.mean_ns = static_cast<double>(row.total_ns) / static_cast<double>(row.count);
    row.p50_ns = nearest_rank(d, 0.50);
    row.p99_ns = nearest_rank(d, 0.99);
    row.share = capacity_ns_ > 0 ? static_cast<double>(row.total_ns) / static_cast<double>(capacity_ns_) : 0;
    row.bubble_before_ns = gaps[k];
    total_count_ += row.count;
    total_busy_ns_ += row.total_ns;
    total_bubble_ns_ += row.bubble_before_ns;
    rows_.push_back(std::move(row));
  }
  // Rows start in kind-name order so that ties sort the same way every time.
  std::sort(rows_.begin(), rows_.end(), [](const KindRow& a, const KindRow& b) { return a.kind < b.kind; });
  sort(sort_column_, sort_ascending_);
}

void StatsModel::sort(StatsColumn column, bool ascending) {
  sort_column_ = column;
  sort_ascending_ = ascending;
  auto key_less = [column](const KindRow& a, const KindRow& b) {
    switch (column) {
      case StatsColumn::kKind: return a.kind < b.kind;
      case StatsColumn::kCount: return a.count < b.count;
      case StatsColumn::kTotal: return a.total_ns < b.total_ns;
      case StatsColumn::kMean: return a.mean_ns < b.mean_ns;
      case StatsColumn::kP50: return a.p50_ns < b.p50_ns;
      case StatsColumn::kP99: return a.p99_ns < b.p99_ns;
      case StatsColumn::kShare: return a.share < b.share;
      case StatsColumn::kBubble: return a.bubble_before_ns < b.bubble_before_ns;
    }
    return false;
  };
  std::stable_sort(rows_.begin(), rows_.end(), [&](const KindRow& a, const KindRow& b) {
    return ascending ? key_less(a, b) : key_less(b, a);
  });
}

DurationHistogram StatsModel::histogram(const std::string& kind, int bins) const {
  DurationHistogram h;
  h.kind = kind;
  auto k = std::find(kinds_.begin(), kinds_.end(), kind);
  if (k == kinds_.end() || bins <= 0) return h;
  const int32_t index = static_cast<int32_t>(k - kinds_.begin());
  std::vector<int64_t> d;
  for (const Sample& s : samples_)
    if (s.kind == index && s.start_ns >= t0_ && (whole_ || s.start_ns < t1_)) d.push_back(s.duration_ns);
  if (d.empty()) return h;
  const auto [lo, hi] = std::minmax_element(d.begin(), d.end());
  h.lo_ns = *lo;
  // Bins of at least 1 ns; the width is rounded up so that the longest one fits.
  h.bin_ns = std::max<int64_t>(1, (*hi - *lo + bins - 1) / bins);
  const int64_t used = std::min<int64_t>(bins, (*hi - *lo) / h.bin_ns + 1);
  h.counts.assign(static_cast<size_t>(used), 0);
  for (int64_t v : d) {
    const int64_t b = std::min<int64_t>(used - 1, (v - h.lo_ns) / h.bin_ns);
    h.max_count = std::max(h.max_count, ++h.counts[static_cast<size_t>(b)]);
  }
  return h;
}

}  // namespace mpk::studio
