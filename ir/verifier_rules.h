// The structure layer's semantic rules (ir/verifier.h), run once the basic structure
// holds (ids resolve, regions lie inside their tensors, operators match their kinds'
// signatures), so that they may index and multiply freely. Internal to the verifier.
#pragma once

#include "ir/ops/op_check.h"
#include "ir/task_graph_index.h"
#include "ir/verifier.h"

namespace mpk {

// verifier_roles.cc: structure.role, structure.unused-tensor (operators and tasks).
void check_roles(const Module& m, DiagnosticSink& sink);

// verifier_attrs.cc: structure.batch, structure.vocab, structure.module-attr.
void check_module_attrs(const Module& m, DiagnosticSink& sink);

// verifier_ranks.cc: structure.tp; graph.cross-rank (on a graph that passed the structure
// layer).
void check_tensor_parallel(const Module& m, DiagnosticSink& sink);
void check_cross_rank_order(const Module& m, DiagnosticSink& sink);

// verifier_tasks.cc: structure.task-order, structure.task-regions, structure.task-cost.
// Returns the scratch tensors each operator's tasks write (by operator id), for
// check_coverage; empty when the graph has no tasks.
using ops::OpScratch;
std::vector<OpScratch> check_task_forms(const Module& m, DiagnosticSink& sink);

// verifier_coverage.cc: structure.coverage, on a graph whose tasks passed
// check_task_forms.
void check_coverage(const Module& m, const std::vector<OpScratch>& scratch, DiagnosticSink& sink);

// verifier_graph.cc: the graph and schedule layers over an index of m.graph (so that
// verify_module builds one for both).
std::vector<Diagnostic> verify_graph_indexed(const Module& m, const TaskGraphIndex& g);
std::vector<Diagnostic> verify_schedule_indexed(const Module& m, const TaskGraphIndex& g);

}  // namespace mpk
