// ServiceProfile: busy SMs over time and the cumulative service of one of them.
#include "traces/service_profile.h"

#include <algorithm>

namespace mpk {

ServiceProfile::ServiceProfile(const std::vector<Execution>& execs,
                               const std::vector<std::pair<double, double>>& extra) {
  std::vector<std::pair<double, int>> edges;
  edges.reserve(execs.size() * 2 + extra.size() * 2);
  for (const Execution& e : execs) {
    edges.push_back({static_cast<double>(e.start_ns), +1});
    edges.push_back({static_cast<double>(e.end_ns), -1});
  }
  for (const auto& [b, e] : extra)
    if (e > b) {
      edges.push_back({b, +1});
      edges.push_back({e, -1});
    }
  std::sort(edges.begin(), edges.end());
  int64_t busy = 0;
  for (size_t i = 0; i < edges.size();) {
    const double t = edges[i].first;
    while (i < edges.size() && edges[i].first == t) busy += edges[i++].second;
    times_.push_back(t);
    busy_.push_back(busy);
  }
}

void ServiceProfile::set_rates(const CostParams& c) {
  rate_one_ = shared_rate(c, 1);
  rates_.resize(times_.size());
  served_.resize(times_.size());
  double served = 0;
  for (size_t j = 0; j < times_.size(); ++j) {
    if (j > 0) served += rates_[j - 1] * (times_[j] - times_[j - 1]);
    rates_[j] = shared_rate(c, std::max<int64_t>(busy_[j], 1));
    served_[j] = served;
  }
}

double ServiceProfile::at(double t) const {
  if (times_.empty()) return t * rate_one_;
  if (t <= times_[0]) return (t - times_[0]) * rate_one_;
  const size_t j = static_cast<size_t>(std::upper_bound(times_.begin(), times_.end(), t) - times_.begin()) - 1;
  return served_[j] + rates_[j] * (t - times_[j]);
}

double ServiceProfile::time_of(double target) const {
  if (times_.empty()) return target / rate_one_;
  if (target <= 0) return times_[0] + target / rate_one_;
  auto it = std::upper_bound(served_.begin(), served_.end(), target);
  const size_t j = it == served_.begin() ? 0 : static_cast<size_t>(it - served_.begin()) - 1;
  return times_[j] + (target - served_[j]) / rates_[j];
}

}  // namespace mpk
