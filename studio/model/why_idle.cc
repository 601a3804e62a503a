// The why-idle walk over a loaded run.
#include "studio/model/why_idle.h"

#include <algorithm>
#include <array>
#include <cstdio>

#include "studio/model/timeline_layout.h"

namespace mpk::studio {

WhyIdle why_idle(const TraceModel& m, int64_t exec) {
  WhyIdle out;
  if (exec < 0 || static_cast<size_t>(exec) >= m.executions().size()) return out;
  const int32_t step = m.execution(exec).step;
  const size_t k = static_cast<size_t>(step);
  const int64_t step_start = k < m.steps().size() ? m.steps()[k].start_ns : 0;
  // The walk of `mpk trace stats`, back to the step's start; it never visits a node twice,
  // so a cycle of blame links (an edited trace) ends it.
  const CriticalPathWalker& w = m.walker();
  const CriticalPath path = w.walk(
      w.node_of(exec), [&](int64_t n) { return w.nodes()[static_cast<size_t>(n)].step != step; },
      step_start);
  std::vector<WhyIdleLink> chain;
  for (size_t i = 0; i < path.entries.size(); ++i) {
    const PathEntry& e = path.entries[i];
    WhyIdleLink link;
    link.exec = i + 1 == path.entries.size() ? exec : w.members(e.node).front();
    if (i > 0) {
      link.via = e.link == PathLink::kDependency ? WhyIdleLink::kEvent : WhyIdleLink::kWorker;
      link.event = e.event;
    }
    // The walk's entries tile the path (time before the step's start or overlapping an
    // earlier entry is clipped), so running and waiting add up to at most the step.
    link.gap_ns = e.gap_ns;
    out.busy_ns += e.run_ns;
    out.gap_ns += e.gap_ns;
    chain.push_back(link);
  }
  out.chain = std::move(chain);
  return out;
}

std::string describe(const TraceModel& m, const WhyIdleLink& link) {
  const Execution& e = m.execution(link.exec);
  std::string s = m.label(link.exec) + " on " + m.row_label(e.worker) + ", ran " +
                  format_duration(static_cast<double>(e.end_ns - e.start_ns));
  const std::string gap = format_duration(static_cast<double>(link.gap_ns));
  switch (link.via) {
    case WhyIdleLink::kStepStart:
      s += ", began " + gap + " after the step started";
      break;
    case WhyIdleLink::kEvent:
      s += ", waited " + gap + " for event " + std::to_string(link.event);
      break;
    case WhyIdleLink::kWorker:
      s += ", queued " + gap + " behind the task before it on its SM";
      break;
  }
  return s;
}

std::string explain_execution(const TraceModel& m, int64_t exec, int64_t shift_ns) {
  const Execution& e = m.execution(exec);
  const Operator& op = m.op_of(e.task);
  const auto t = [](int64_t ns) { return format_duration(static_cast<double>(ns)); };
  const auto at = [&](int64_t ns) { return t(ns + shift_ns); };
  std::string s;
  if (m.group_of(exec).size() > 1)
    s = m.label(exec) + "\nrun as one unit (a linear group); this one:\n";
  s += op.name + "  [task " + std::to_string(e.task) + "]\n";
  s += "operator kind " + std::string(name_of(op.kind)) + ", task kind " +
       std::string(name_of(m.task(e.task).kind));
  s += op.layer >= 0 ? ", layer " + std::to_string(op.layer) : std::string(", outside the layers");
  const int64_t batch = attr_int_or(m.graph().attrs, "batch", 1);
  const Task& task = m.task(e.task);
  if (batch > 1 && !task.writes.empty() && !task.writes[0].dims.empty()) {  // dimension 0 of a written tensor: the batch
    const Range rows = task.writes[0].dims[0];
    s += "\nbatch rows " + std::to_string(rows.lo) + ".." + std::to_string(rows.hi - 1) + " of " + std::to_string(batch);
  }
  s += "\nstep " + std::to_string(e.step) + ", " + m.row_label(e.worker) + "\n";
  s += "wait  " + at(e.wait_begin_ns) + "\nstart " + at(e.start_ns) + "  (waited " +
       t(e.start_ns - e.wait_begin_ns) + ")\nend   " + at(e.end_ns) + "\nduration " +
       t(e.end_ns - e.start_ns);
  return s;
}

std::string explain_merged(const TraceModel& m, const TaskBox& box, int64_t shift_ns) {
  const auto t = [](int64_t ns) { return format_duration(static_cast<double>(ns)); };
  const auto at = [&](int64_t ns) { return t(ns + shift_ns); };
  const int32_t worker = m.execution(box.exec).worker;
  const int64_t span = box.t1_ns - box.t0_ns;
  char busy[64];
  std::snprintf(busy, sizeof busy, "busy %.1f %%", 100.0 * box_busy_fraction(m, box));
  std::string s = std::to_string(box.count) + " tasks on " + m.row_label(worker) + " from " + at(box.t0_ns) + " to " +
                  at(box.t1_ns) + " (" + t(span) + "), " + busy;
  // Its idle time by cause.
  std::array<int64_t, 4> idle{};
  const IndexRange r = m.bubbles_in(worker, box.t0_ns, box.t1_ns);
  for (int64_t i = r.begin; i < r.end; ++i) {
    const Bubble& b = m.bubbles(worker)[static_cast<size_t>(i)];
    idle[static_cast<size_t>(b.cause) % 4] += std::min(b.end_ns, box.t1_ns) - std::max(b.start_ns, box.t0_ns);
  }
  for (size_t c = 0; c < idle.size(); ++c) {
    if (idle[c] <= 0 || span <= 0) continue;
    char line[96];
    std::snprintf(line, sizeof line, "\nidle %s: %s (%.1f %%)", name_of(static_cast<BubbleCause>(c)), t(idle[c]).c_str(),
                  100.0 * static_cast<double>(idle[c]) / static_cast<double>(span));
    s += line;
  }
  return s + "\nclick or zoom in to see them";
}

std::string explain_bubble(const TraceModel& m, const Bubble& b, int64_t shift_ns) {
  const auto t = [](int64_t ns) { return format_duration(static_cast<double>(ns)); };
  const auto at = [&](int64_t ns) { return t(ns + shift_ns); };
  std::string s = "idle " + t(b.end_ns - b.start_ns) + ": " + name_of(b.cause) + " (step " +
                  std::to_string(b.step) + ", " + m.row_label(b.worker) + ", " +
                  at(b.start_ns) + " to " + at(b.end_ns) + ")\n";
  const auto task_name = [&](TaskId task) {
    return task >= 0 ? m.op_of(task).name + " [task " + std::to_string(task) + "]" : std::string("?");
  };
  switch (b.cause) {
    case BubbleCause::kWait: {
      s += "waited for event " + std::to_string(b.event) + ", released last by " +
           task_name(b.producer) + " on " + m.row_label(b.producer_worker);
      const int32_t dist = b.event >= 0 ? m.graph().graph.events[static_cast<size_t>(b.event)].step_distance : 0;
      const int64_t p = b.producer >= 0 ? m.find(b.producer, b.step - dist) : -1;
      if (p >= 0) {
        const int64_t end = m.execution(p).end_ns;
        s += ",\nwhich finished at " + at(end);
        // After that, the wait was the release reaching this SM (the runtime, not the schedule).
        const int64_t after = b.end_ns - std::max(b.start_ns, end);
        if (after > 0) s += "; the wait went on " + t(after) + " after it";
      }
      if (dist > 0) s += " (step " + std::to_string(b.step - dist) + ")";
      s += "\nbefore " + task_name(b.task);
      break;
    }
    case BubbleCause::kQueueEmpty:
      s += "this SM's list for the step was done while other SMs still started its tasks";
      break;
    case BubbleCause::kStepTail:
      s += "every task of the step had started; the step was draining";
      break;
    case BubbleCause::kOverhead:
      s += "no wait to blame: dispatch and event release before " + task_name(b.task);
      break;
  }
  return s;
}

}  // namespace mpk::studio
