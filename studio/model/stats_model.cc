// Statistics of a run over a time range, grouped by kind, operator or layer; histograms.
#include "studio/model/stats_model.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace mpk::studio {

const char* name_of(StatsGrouping g) {
  switch (g) {
    case StatsGrouping::kKind: return "kind";
    case StatsGrouping::kOperator: return "operator";
    case StatsGrouping::kOperatorAllLayers: return "operator, all layers";
    case StatsGrouping::kLayer: return "layer";
  }
  return "?";
}

int64_t nearest_rank(const std::vector<int64_t>& sorted, double q) {
  if (sorted.empty()) return 0;
  const double rank = std::ceil(q * static_cast<double>(sorted.size()));
  const size_t i = static_cast<size_t>(std::clamp(rank, 1.0, static_cast<double>(sorted.size())));
  return sorted[i - 1];
}

StatsModel::StatsModel(const TraceModel& m)
    : run_(m.run().id), duration_ns_(m.duration_ns()), num_workers_(m.num_workers()) {
  // Units: one per operator and one per distinct linear group (by its members' names),
  // each made when first met; the walker names them as the critical path does.
  const CriticalPathWalker& walker = m.walker();
  std::vector<int32_t> op_unit(m.graph().program.ops.size(), -1);
  std::map<std::string, int32_t> group_units;
  for (int32_t w = 0; w < m.num_workers(); ++w) {
    const IndexRange r = m.worker_range(w);
    int64_t free_at = 0;  // the end of the worker's previous execution
    for (int64_t i = r.begin; i < r.end;) {
      const IndexRange g = m.group_of(i);
      const Execution& e = m.execution(i);
      int32_t unit = -1;
      if (g.size() == 1) {
        int32_t& u = op_unit[static_cast<size_t>(m.task(e.task).op)];
        if (u < 0) {
          const Operator& op = m.op_of(e.task);
          u = static_cast<int32_t>(units_.size());
          units_.push_back({op.kind, op.layer, op.name, walker.name_of(walker.node_of(i), true)});
        }
        unit = u;
      } else {
        // A linear group: "L3.q_proj+k_proj+v_proj", its members once.
        const std::string name = m.group_name(i);
        auto [it, fresh] = group_units.emplace(name, static_cast<int32_t>(units_.size()));
        const Operator& lead = m.op_of(e.task);
        if (fresh) units_.push_back({lead.kind, lead.layer, name, walker.name_of(walker.node_of(i), true)});
        unit = it->second;
      }
      samples_.push_back({e.start_ns, e.end_ns - e.start_ns, std::max<int64_t>(0, e.start_ns - free_at), 0});
      unit_of_.push_back(unit);
      free_at = std::max(free_at, e.end_ns);
      i = std::max(g.end, i + 1);
    }
  }
  // Ordered by start (unit_of_ alongside).
  std::vector<size_t> order(samples_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return samples_[a].start_ns < samples_[b].start_ns; });
  std::vector<Sample> sorted(samples_.size());
  std::vector<int32_t> units(samples_.size());
  for (size_t i = 0; i < order.size(); ++i) {
    sorted[i] = samples_[order[i]];
    units[i] = unit_of_[order[i]];
  }
  samples_ = std::move(sorted);
  unit_of_ = std::move(units);
  regroup();
  set_range(0, 0);
}

void StatsModel::set_grouping(StatsGrouping g) {
  grouping_ = g;
  regroup();
  recompute();
}

void StatsModel::regroup() {
  names_.clear();
  group_kind_.clear();
  std::map<std::string, int32_t> index;
  std::vector<int32_t> group_of_unit(units_.size());
  for (size_t u = 0; u < units_.size(); ++u) {
    const Unit& x = units_[u];
    std::string name;
    switch (grouping_) {
      case StatsGrouping::kKind: name = name_of(x.kind); break;
      case StatsGrouping::kOperator: name = x.op; break;
      case StatsGrouping::kOperatorAllLayers: name = x.op_all_layers; break;
      case StatsGrouping::kLayer: name = x.layer >= 0 ? "layer " + std::to_string(x.layer) : "outside layers"; break;
    }
    auto [it, fresh] = index.emplace(name, static_cast<int32_t>(names_.size()));
    if (fresh) {
      names_.push_back(name);
      group_kind_.push_back(static_cast<int>(x.kind));
    } else if (group_kind_[static_cast<size_t>(it->second)] != static_cast<int>(x.kind)) {
      group_kind_[static_cast<size_t>(it->second)] = -1;
    }
    group_of_unit[u] = it->second;
  }
  for (size_t i = 0; i < samples_.size(); ++i) samples_[i].group = group_of_unit[static_cast<size_t>(unit_of_[i])];
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
  std::vector<std::vector<int64_t>> durations(names_.size());
  std::vector<int64_t> gaps(names_.size(), 0);
  for (auto it = first; it != last; ++it) {
    durations[static_cast<size_t>(it->group)].push_back(it->duration_ns);
    gaps[static_cast<size_t>(it->group)] += it->gap_ns;
  }
  const int64_t length = whole_ ? duration_ns_ : t1_ - t0_;
  capacity_ns_ = static_cast<int64_t>(num_workers_) * length;
  rows_.clear();
  total_count_ = total_busy_ns_ = total_bubble_ns_ = 0;
  for (size_t k = 0; k < names_.size(); ++k) {
    std::vector<int64_t>& d = durations[k];
    if (d.empty()) continue;
    std::sort(d.begin(), d.end());
    StatsRow row;
    row.name = names_[k];
    row.kind = group_kind_[k];
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
  // Rows start in name order so that ties sort the same way every time.
  std::sort(rows_.begin(), rows_.end(), [](const StatsRow& a, const StatsRow& b) { return a.name < b.name; });
  sort(sort_column_, sort_ascending_);
}

void StatsModel::sort(StatsColumn column, bool ascending) {
  sort_column_ = column;
  sort_ascending_ = ascending;
  auto key_less = [column](const StatsRow& a, const StatsRow& b) {
    switch (column) {
      case StatsColumn::kName: return a.name < b.name;
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
  std::stable_sort(rows_.begin(), rows_.end(), [&](const StatsRow& a, const StatsRow& b) {
    return ascending ? key_less(a, b) : key_less(b, a);
  });
}

DurationHistogram StatsModel::histogram(const std::string& name, int bins) const {
  DurationHistogram h;
  h.name = name;
  auto k = std::find(names_.begin(), names_.end(), name);
  if (k == names_.end() || bins <= 0) return h;
  const int32_t index = static_cast<int32_t>(k - names_.begin());
  std::vector<int64_t> d;
  for (const Sample& s : samples_)
    if (s.group == index && s.start_ns >= t0_ && (whole_ || s.start_ns < t1_)) d.push_back(s.duration_ns);
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
