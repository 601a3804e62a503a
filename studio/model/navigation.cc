// Search, range summaries, filters, zoom targets and CSV export (studio/model/navigation.h).
#include "studio/model/navigation.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>

namespace mpk::studio {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// N of "task N", "#N" or "N"; -1 when the query is not one.
int64_t task_number(std::string query) {
  query = lower(query);
  if (query.rfind("task", 0) == 0) query = query.substr(4);
  if (!query.empty() && query[0] == '#') query = query.substr(1);
  const size_t a = query.find_first_not_of(' ');
  if (a == std::string::npos) return -1;
  query = query.substr(a);
  if (query.empty() || !std::all_of(query.begin(), query.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }) ||
      query.size() > 12)
    return -1;
  return std::stoll(query);
}

// Executions of `worker` overlapping [t0, t1), all workers.
template <typename Fn>
void for_each_overlapping(const TraceModel& m, double t0, double t1, Fn fn) {
  for (int32_t w = 0; w < m.num_workers(); ++w) {
    const IndexRange r = m.executions_in(w, static_cast<int64_t>(std::floor(t0)), static_cast<int64_t>(std::ceil(t1)));
    for (int64_t i = r.begin; i < r.end; ++i) fn(i);
  }
}

}  // namespace

std::vector<int64_t> search_executions(const TraceModel& m, std::string_view query) {
  std::vector<int64_t> out;
  const std::string q = lower(query);
  if (q.find_first_not_of(' ') == std::string::npos) return out;
  const auto& tasks = m.graph().graph.tasks;
  std::vector<char> match(tasks.size(), 0);
  const int64_t number = task_number(std::string(query));
  if (number >= 0) {
    if (number < static_cast<int64_t>(tasks.size())) match[static_cast<size_t>(number)] = 1;
  } else {
    const auto& ops = m.graph().program.ops;
    std::vector<char> op_match(ops.size(), 0);
    for (size_t o = 0; o < ops.size(); ++o) op_match[o] = lower(ops[o].name).find(q) != std::string::npos;
    for (size_t t = 0; t < tasks.size(); ++t) match[t] = op_match[static_cast<size_t>(tasks[t].op)];
  }
  for (size_t i = 0; i < m.executions().size(); ++i)
    if (match[static_cast<size_t>(m.executions()[i].task)]) out.push_back(static_cast<int64_t>(i));
  std::sort(out.begin(), out.end(), [&](int64_t a, int64_t b) {
    const Execution &x = m.execution(a), &y = m.execution(b);
    return x.start_ns != y.start_ns ? x.start_ns < y.start_ns : a < b;
  });
  return out;
}

int64_t next_match(const TraceModel& m, const std::vector<int64_t>& matches, int64_t from, bool forward) {
  if (matches.empty()) return -1;
  if (from < 0) return forward ? matches.front() : matches.back();
  const auto before = [&](int64_t a, int64_t b) {
    const Execution &x = m.execution(a), &y = m.execution(b);
    return x.start_ns != y.start_ns ? x.start_ns < y.start_ns : a < b;
  };
  if (forward) {
    const auto it = std::upper_bound(matches.begin(), matches.end(), from, before);
    return it == matches.end() ? matches.front() : *it;
  }
  const auto it = std::lower_bound(matches.begin(), matches.end(), from, before);
  return it == matches.begin() ? matches.back() : *(it - 1);
}

RangeSummary summarize_range(const TraceModel& m, double t0, double t1) {
  RangeSummary r;
  r.duration_ns = std::max(0.0, t1 - t0);
  for_each_overlapping(m, t0, t1, [&](int64_t i) {
    const Execution& e = m.execution(i);
    const double s = static_cast<double>(e.start_ns), end = static_cast<double>(e.end_ns);
    if (s >= t0 && s < t1) ++r.tasks;
    const double bytes = static_cast<double>(m.bytes_of(i));
    r.bytes += end > s ? bytes * (std::min(end, t1) - std::max(s, t0)) / (end - s) : (s >= t0 && s < t1 ? bytes : 0);
  });
  return r;
}

bool passes(const TraceModel& m, const ViewFilter& f, int64_t exec) {
  const Execution& e = m.execution(exec);
  if (f.step >= 0 && e.step != f.step) return false;
  if (f.layer >= 0 && m.op_of(e.task).layer != f.layer) return false;
  return (f.kinds >> static_cast<int>(m.kind_of(e.task))) & 1u;
}

TimeWindow window_around(double t0, double t1) {
  const double pad = std::max(0.05 * (t1 - t0), 50.0);
  return {t0 - pad, t1 + pad};
}

std::optional<TimeWindow> zoom_target(const StudioState& s) {
  if (!s.model) return std::nullopt;
  if (s.range) return window_around(s.range->t0_ns, s.range->t1_ns);
  if (s.selection.exec < 0) return std::nullopt;
  const TraceModel& m = *s.model;
  double t0 = static_cast<double>(m.execution(s.selection.exec).start_ns);
  double t1 = static_cast<double>(m.execution(s.selection.exec).end_ns);
  if (s.selection.show_why_idle)
    for (int64_t x : s.selection.why_idle) {
      t0 = std::min(t0, static_cast<double>(m.execution(x).start_ns));
      t1 = std::max(t1, static_cast<double>(m.execution(x).end_ns));
    }
  return window_around(t0, t1);
}

void export_range_csv(const TraceModel& m, double t0, double t1, std::ostream& out) {
  out << "task,operator,kind,layer,step,worker,sm,wait_ns,start_ns,end_ns,bytes\n";
  for_each_overlapping(m, t0, t1, [&](int64_t i) {
    const Execution& e = m.execution(i);
    const Operator& op = m.op_of(e.task);
    // Operator names are identifiers (L3.q_proj); quote them anyway.
    std::string name = "\"";
    for (char c : op.name) name += c == '"' ? std::string("\"\"") : std::string(1, c);
    out << e.task << ',' << name << "\"," << name_of(op.kind) << ',' << op.layer << ',' << e.step << ',' << e.worker << ','
        << e.sm << ',' << e.start_ns - e.wait_begin_ns << ',' << e.start_ns << ',' << e.end_ns << ',' << m.bytes_of(i)
        << '\n';
  });
}

}  // namespace mpk::studio
