// structure.coverage (ir/verifier_rules.h): docs/ir.md's postcondition of decompose, for any
// task graph. Per operator, the write regions of its tasks are pairwise disjoint and
// together cover every element of its outputs and of its scratch tensors exactly once
// (all shares of a cooperative linear declare its whole output: it counts once); an
// argmax's partial tasks read disjoint logits columns that cover all of them. A task
// deleted, or a write region shrunk, emptied or duplicated, leaves elements that no
// task computes (they keep stale values or zeros) or that two tasks race on.
//
// Per tensor, the boxes are sorted on the dimension where their starts vary most and
// swept: a box is compared only with the earlier boxes still open on that dimension, so
// a tiling costs O(n log n); the covered count is then the sum of the disjoint volumes.
#include <algorithm>

#include "ir/verifier_rules.h"

namespace mpk {
namespace {

struct Box {
  const Region* region;
  TaskId task;
};

// Two overlapping boxes of `boxes` (one tensor, same rank), or {-1, -1} as tasks.
std::pair<Box, Box> find_overlap(std::vector<Box>& boxes) {
  const std::pair<Box, Box> none{{nullptr, -1}, {nullptr, -1}};
  if (boxes.size() < 2) return none;
  const size_t rank = boxes[0].region->dims.size();
  if (rank == 0) return {boxes[0], boxes[1]};
  size_t key = 0, most = 0;
  std::vector<int64_t> starts(boxes.size());
  for (size_t d = 0; d < rank; ++d) {
    for (size_t i = 0; i < boxes.size(); ++i) starts[i] = boxes[i].region->dims[d].lo;
    std::sort(starts.begin(), starts.end());
    const auto distinct = static_cast<size_t>(std::unique(starts.begin(), starts.end()) - starts.begin());
    if (distinct > most) most = distinct, key = d;
  }
  std::sort(boxes.begin(), boxes.end(), [&](const Box& a, const Box& b) {
    const Range &x = a.region->dims[key], &y = b.region->dims[key];
    return x.lo != y.lo ? x.lo < y.lo : a.task < b.task;
  });
  std::vector<Box> open;
  for (const Box& b : boxes) {
    const int64_t lo = b.region->dims[key].lo;
    open.erase(std::remove_if(open.begin(), open.end(), [&](const Box& o) { return o.region->dims[key].hi <= lo; }),
               open.end());
    for (const Box& o : open)
      if (o.region->overlaps(*b.region)) return {o, b};
    open.push_back(b);
  }
  return none;
}

class CoverageChecker {
 public:
  CoverageChecker(const Module& m, const std::vector<OpScratch>& scratch, DiagnosticSink& sink)
      : m_(m), p_(m.program), scratch_(scratch), sink_(sink) {}

  void run() {
    const auto& tasks = m_.graph.tasks;
    size_t begin = 0;  // tasks are in program order: each operator's are contiguous
    for (size_t o = 0; o < p_.ops.size(); ++o) {
      size_t end = begin;
      while (end < tasks.size() && tasks[end].op == static_cast<OpId>(o)) ++end;
      op(static_cast<OpId>(o), begin, end);
      begin = end;
    }
  }

 private:
  void op(OpId o, size_t begin, size_t end) {
    const Operator& op = p_.ops[o];
    const std::string who = "operator '" + op.name + "'";
    if (begin == end) return;  // check_task_forms reported it
    std::vector<TensorId> owned;
    for (TensorId t : op.outputs)
      if (std::find(owned.begin(), owned.end(), t) == owned.end()) owned.push_back(t);
    for (TensorId t : {scratch_[o].val, scratch_[o].idx, scratch_[o].part})
      if (t >= 0) owned.push_back(t);
    std::vector<std::vector<Box>> boxes(owned.size());
    std::vector<Box> logits;  // an argmax's partial reads
    const TensorId coop_y = linear_form(op).y;
    for (size_t i = begin; i < end; ++i) {
      const Task& t = m_.graph.tasks[i];
      const CoopShare c = coop_share(t);
      for (const Region& r : t.writes) {
        if (c.cooperative() && c.share != 0 && r.tensor == coop_y) continue;  // share 0's counts
        const size_t k = static_cast<size_t>(std::find(owned.begin(), owned.end(), r.tensor) - owned.begin());
        if (k < owned.size()) boxes[k].push_back({&r, static_cast<TaskId>(i)});
        // Any other tensor was refused by structure.task-regions.
      }
      if (t.kind == TaskKind::kArgmaxPartial)
        for (const Region& r : t.reads)
          if (r.tensor == op.inputs[0]) logits.push_back({&r, static_cast<TaskId>(i)});
    }
    for (size_t k = 0; k < owned.size(); ++k) cover(who + ": its tasks", "write", owned[k], boxes[k]);
    if (op.kind == OpKind::kArgmax) cover(who + ": its argmax_partial tasks", "read", op.inputs[0], logits);
  }

  void cover(const std::string& who, const char* verb, TensorId t, std::vector<Box>& boxes) {
    const Tensor& tensor = p_.tensors[t];
    const auto [a, b] = find_overlap(boxes);
    if (a.region) {
      const Region both = *a.region->intersect(*b.region);
      const std::string where = format_region(tensor.name, both);
      sink_.add("structure.coverage",
                who + " " + verb + " " + where + " twice: " +
                    (a.task == b.task ? describe_task(m_, a.task) + " " + verb + "s it twice"
                                      : describe_task(m_, a.task) + " and " + describe_task(m_, b.task) + " both " +
                                            verb + " it") +
                    " (an operator's tasks " + verb + " disjoint regions)");
      return;
    }
    int64_t covered = 0;  // disjoint boxes inside the tensor: at most its element count
    for (const Box& x : boxes) covered += x.region->volume();
    const int64_t total = tensor.num_elements();
    if (covered != total)
      sink_.add("structure.coverage", who + " " + verb + " " + std::to_string(covered) + " of the " +
                                          std::to_string(total) + " elements of '" + tensor.name +
                                          "': together they must " + verb + " all of it (a task is missing, or "
                                          "a region is too small)");
  }

  const Module& m_;
  const Program& p_;
  const std::vector<OpScratch>& scratch_;
  DiagnosticSink& sink_;
};

}  // namespace

void check_coverage(const Module& m, const std::vector<OpScratch>& scratch, DiagnosticSink& sink) {
  CoverageChecker(m, scratch, sink).run();
}

}  // namespace mpk
