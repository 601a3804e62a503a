// structure.tp and graph.cross-rank (ir/verifier_rules.h): the tensor-parallel rules of
// docs/ir.md "Tensor parallel". A module with all_reduce operators, parallel linears or
// all_ranks events says how many ranks run it (attr tp); every reader of a weight
// splits it the same way; and every task pair that meets on a tensor read on every rank
// (a writer on one rank, an all_reduce reading it on all) is ordered by an all_ranks
// event: distance 0 from writer to reader, distance 1 from reader back to the next
// step's writer. A local event orders the pair on one rank only, so the other ranks'
// copies would be read before they are written, or overwritten while still read.
#include <set>
#include <tuple>

#include "ir/ops/tensor_parallel.h"
#include "ir/verifier_rules.h"

namespace mpk {

void check_tensor_parallel(const Module& m, DiagnosticSink& sink) {
  const Program& p = m.program;
  const bool has_tp = m.attrs.count("tp") > 0;
  for (const Operator& op : p.ops) {
    if (has_tp) break;
    if (op.kind == OpKind::kAllReduce || op.attrs.count("parallel"))
      sink.add("structure.tp", "operator '" + op.name + "' is tensor parallel, but the module has no attr tp");
  }
  for (size_t e = 0; e < m.graph.events.size() && !has_tp; ++e)
    if (m.graph.events[e].all_ranks)
      sink.add("structure.tp", "event " + std::to_string(e) + " is all_ranks, but the module has no attr tp");
  for (size_t t = 0; t < p.tensors.size(); ++t) {
    const TensorId id = static_cast<TensorId>(t);
    if (p.tensors[t].role != TensorRole::kWeight || p.readers[t].empty()) continue;
    const int dim = split_dim_in(p.ops[p.readers[t][0]], id);
    for (OpId o : p.readers[t])
      if (split_dim_in(p.ops[o], id) != dim)
        sink.add("structure.tp", "weight '" + p.tensors[t].name + "' is read split on dimension " +
                                     std::to_string(dim) + " by operator '" + p.ops[p.readers[t][0]].name +
                                     "' but on " + std::to_string(split_dim_in(p.ops[o], id)) + " by '" +
                                     p.ops[o].name + "' (-1: whole)");
  }
}

void check_cross_rank_order(const Module& m, DiagnosticSink& sink) {
  const Program& p = m.program;
  const std::vector<bool> symmetric = symmetric_tensors(m);
  std::set<std::tuple<TaskId, TaskId, int32_t>> ordered;  // (producer, consumer, distance)
  for (const Event& e : m.graph.events)
    if (e.all_ranks)
      for (TaskId a : e.producers)
        for (TaskId b : e.consumers) ordered.insert({a, b, e.step_distance});
  const auto& tasks = m.graph.tasks;
  for (size_t r = 0; r < tasks.size(); ++r) {
    const Operator& reader = p.ops[tasks[r].op];
    for (const Region& read : tasks[r].reads) {
      if (!symmetric[read.tensor] || !reads_every_rank(reader, read.tensor)) continue;
      for (size_t w = 0; w < tasks.size(); ++w)
        for (const Region& write : tasks[w].writes) {
          if (write.tensor != read.tensor || !write.overlaps(read)) continue;
          const TaskId wt = static_cast<TaskId>(w), rt = static_cast<TaskId>(r);
          if (!ordered.count({wt, rt, 0}))
            sink.add("graph.cross-rank", describe_task(m, rt) + " reads '" + p.tensors[read.tensor].name +
                                             "' on every rank, but no all_ranks event orders it after " +
                                             describe_task(m, wt) + ", which writes it");
          if (!ordered.count({rt, wt, 1}))
            sink.add("graph.cross-rank", describe_task(m, wt) + " writes '" + p.tensors[read.tensor].name +
                                             "', but no all_ranks event of distance 1 orders it after the "
                                             "previous step's " + describe_task(m, rt) + " on every rank");
        }
    }
  }
}

}  // namespace mpk
