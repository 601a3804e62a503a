// `mpk trace path` reports: the same rows as aligned tables or as CSV.
#include <algorithm>
#include <optional>

#include "traces/analysis.h"
#include "traces/path_split.h"
#include "traces/text_table.h"

namespace mpk {
namespace {

struct Row {
  std::string kind;  // run hop same-sm start | other total makespan period
  std::string segment;
  double ns = 0;
  std::optional<double> share;  // of the path's length
  int64_t position = -1;        // index along the path; -1 for the summary rows
  int64_t instances = -1;       // -1 for a single walk
};

struct Table {
  std::string section;  // step | layer | outside
  int32_t step = -1;    // -1: a mean over instances
  int64_t of = 0;       // instances in the mean
  std::string title;
  std::vector<Row> rows;
};

const char* slug(SegmentKind k) {
  switch (k) {
    case SegmentKind::kRun: return "run";
    case SegmentKind::kHop: return "hop";
    case SegmentKind::kSameSm: return "same-sm";
    case SegmentKind::kStart: return "start";
  }
  return "?";
}

std::string us(double ns) { return strf("%.2f", ns * 1e-3); }

std::optional<double> share_of(double ns, double total) {
  return total > 0 ? std::optional<double>(ns / total) : std::nullopt;
}

// Keeps the `top` longest rows (all when top <= 0) in path order and sums the rest
// into one "other" row; then adds the total.
void finish(Table& t, int top, double length_ns) {
  if (top > 0 && t.rows.size() > static_cast<size_t>(top)) {
    std::vector<size_t> order(t.rows.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return t.rows[a].ns > t.rows[b].ns; });
    std::vector<bool> keep(t.rows.size(), false);
    for (int i = 0; i < top; ++i) keep[order[i]] = true;
    std::vector<Row> kept;
    Row other{"other", "", 0, std::nullopt, -1, -1};
    size_t dropped = 0;
    for (size_t i = 0; i < t.rows.size(); ++i) {
      if (keep[i]) {
        kept.push_back(t.rows[i]);
      } else {
        other.ns += t.rows[i].ns;
        ++dropped;
      }
    }
    other.segment = strf("(%zu shorter segments)", dropped);
    other.share = share_of(other.ns, length_ns);
    kept.push_back(other);
    t.rows = std::move(kept);
  }
  t.rows.push_back({"total", "total", length_ns, share_of(length_ns, length_ns), -1, -1});
}

std::string cycle_note(const std::vector<PathInstance>& instances) {
  const auto n = std::count_if(instances.begin(), instances.end(),
                               [](const PathInstance& i) { return i.cycle; });
  return n ? strf("; %lld walks stopped at a cycle (inconsistent times)", static_cast<long long>(n))
           : "";
}

Table step_table(const PathInstance& in, int top) {
  Table t;
  t.section = "step";
  t.step = in.step;
  t.title = strf("step %d  critical path %s us of a %s us makespan; %lld nodes: %lld hops, %lld "
                 "same-SM gaps",
                 in.step, us(static_cast<double>(in.length_ns)).c_str(),
                 us(static_cast<double>(in.period_ns)).c_str(), static_cast<long long>(in.nodes),
                 static_cast<long long>(in.hops), static_cast<long long>(in.same_sm)) +
            cycle_note({in});
  const double length = static_cast<double>(in.length_ns);
  for (size_t i = 0; i < in.segments.size(); ++i) {
    const Segment& s = in.segments[i];
    t.rows.push_back({slug(s.kind), s.label, static_cast<double>(s.ns),
                      share_of(static_cast<double>(s.ns), length), static_cast<int64_t>(i), -1});
  }
  finish(t, top, length);
  t.rows.push_back({"makespan", "step makespan", static_cast<double>(in.period_ns), std::nullopt, -1, -1});
  return t;
}

Table mean_table(const std::string& section, const std::string& title, const PathMean& mean,
                 int top) {
  Table t;
  t.section = section;
  t.of = mean.instances;
  t.title = title;
  for (size_t i = 0; i < mean.segments.size(); ++i) {
    const SegmentMean& s = mean.segments[i];
    t.rows.push_back({slug(s.kind), s.label, s.mean_ns, share_of(s.mean_ns, mean.length_ns),
                      static_cast<int64_t>(i), s.instances});
  }
  finish(t, top, mean.length_ns);
  return t;
}

std::vector<Table> tables(const PathSplit& s, int top) {
  std::vector<Table> out;
  for (const PathInstance& in : s.steps) out.push_back(step_table(in, top));
  if (s.num_layers < 2) return out;
  const std::string steps = strf("steps %d..%d", s.first_step, s.last_step);
  Table layer = mean_table(
      "layer",
      strf("critical path per decoder layer: mean of %lld instances (%s, layers 1..%d)",
           static_cast<long long>(s.layer_mean.instances), steps.c_str(), s.num_layers - 1) +
          cycle_note(s.layers),
      s.layer_mean, top);
  layer.rows.push_back({"period", "layer period", s.layer_mean.period_ns, std::nullopt, -1, -1});
  out.push_back(std::move(layer));
  Table outside = mean_table(
      "outside",
      strf("outside the layers (step start -> first layer, last layer -> step end): mean of %lld "
           "steps (%s)",
           static_cast<long long>(s.outside_mean.instances), steps.c_str()) +
          cycle_note(s.outside),
      s.outside_mean, top);
  outside.rows.push_back(
      {"makespan", "step makespan", s.outside_mean.period_ns, std::nullopt, -1, -1});
  out.push_back(std::move(outside));
  return out;
}

std::string csv_field(const std::string& v) {
  if (v.find_first_of(",\"\n") == std::string::npos) return v;
  std::string q = "\"";
  for (char c : v) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

}  // namespace

std::string format_path_split(const PathSplit& s, int top) {
  std::string out = format_run_title(s.run);
  for (const Table& t : tables(s, top)) {
    out += "\n" + t.title + "\n";
    const bool mean = t.step < 0;
    TextTable table(mean ? std::vector<std::string>{"segment", "us", "share", "in"}
                         : std::vector<std::string>{"#", "segment", "us", "share"});
    for (const Row& r : t.rows) {
      const std::string share = r.share ? strf("%.1f %%", 100.0 * *r.share) : "";
      if (mean)
        table.add({r.segment, us(r.ns), share,
                   r.instances >= 0 ? strf("%lld/%lld", static_cast<long long>(r.instances),
                                           static_cast<long long>(t.of))
                                    : ""});
      else
        table.add({r.position >= 0 ? std::to_string(r.position) : "", r.segment, us(r.ns), share});
    }
    out += table.str();
  }
  return out;
}

std::string format_path_split_csv(const PathSplit& s, int top) {
  std::string out = "section,step,position,kind,segment,us,share,instances,of\n";
  for (const Table& t : tables(s, top))
    for (const Row& r : t.rows)
      out += t.section + "," + (t.step >= 0 ? std::to_string(t.step) : "") + "," +
             (r.position >= 0 ? std::to_string(r.position) : "") + "," + r.kind + "," +
             csv_field(r.segment) + "," + us(r.ns) + "," +
             (r.share ? strf("%.2f", 100.0 * *r.share) : "") + "," +
             (r.instances >= 0 ? std::to_string(r.instances) : "") + "," +
             (t.step < 0 ? std::to_string(t.of) : "") + "\n";
  return out;
}

}  // namespace mpk
