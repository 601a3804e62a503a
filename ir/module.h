// The in-memory IR that passes work on: a Program (tensors + operators of one decode
// step), a TaskGraph (tasks, events, schedule), the machine model and provenance.
// Ids are dense indices into the vectors. Protobuf never appears here: ir/serialize.h
// is the one bridge to ir/mpk.proto. docs/ir.md is the normative description.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/attrs.h"
#include "ir/region.h"
#include "ir/types.h"

namespace mpk {

struct Tensor {
  std::string name;  // unique; weights use their Hugging Face checkpoint names
  DType dtype = DType::kBF16;
  std::vector<int64_t> shape;
  TensorRole role = TensorRole::kActivation;

  // Checked: a count that overflows int64 throws mpk::Error naming the tensor.
  int64_t num_elements() const;
  int64_t num_bytes() const;
};

struct Operator {
  std::string name;  // unique
  OpKind kind = OpKind::kLinear;
  std::vector<TensorId> inputs;
  std::vector<TensorId> outputs;
  Attrs attrs;
  int32_t layer = -1;  // decoder layer, -1 outside the layers
};

struct Program {
  std::vector<Tensor> tensors;
  std::vector<Operator> ops;  // in program order (a valid sequential execution order)

  TensorId add_tensor(Tensor t);
  OpId add_op(Operator op);
  // -1 when absent.
  TensorId find_tensor(const std::string& name) const;
  OpId find_op(const std::string& name) const;
  const Tensor& tensor(TensorId id) const { return tensors.at(id); }

  // Use lists, rebuilt by rebuild_use_lists(): ops that write / read each tensor.
  std::vector<std::vector<OpId>> writers;
  std::vector<std::vector<OpId>> readers;
  void rebuild_use_lists();
};

struct Task {
  OpId op = -1;
  TaskKind kind = TaskKind::kLinear;
  std::vector<Region> reads;
  std::vector<Region> writes;
  int64_t bytes = 0;  // estimated bytes moved through device memory per step
  int64_t flops = 0;  // estimated floating-point operations per step
  Attrs attrs;        // kind-specific parameters (docs/ir.md)
  // Which events a task waits on and triggers is the events' to say: ask a
  // TaskGraphIndex (ir/task_graph_index.h).
};

// A counter in device memory. Each producer adds 1 per step when its writes are
// visible. A consumer running decode step k (k = 0, 1, ...) waits until
// counter >= target * (k + 1 - step_distance). step_distance 0: same step;
// 1: the producers' previous step (cross-step dependency). all_ranks (tensor parallel,
// docs/ir.md "Tensor parallel"): the consumer waits for the counter of every rank, whose
// producers are the same tasks of that rank's copy of the graph.
struct Event {
  std::vector<TaskId> producers;  // sorted, unique
  std::vector<TaskId> consumers;  // sorted, unique
  int64_t target = 0;             // == producers.size()
  int32_t step_distance = 0;
  bool all_ranks = false;
};

struct Schedule {
  std::string policy;  // empty: not scheduled yet
  Attrs params;
  std::vector<std::vector<TaskId>> workers;  // one ordered list per worker (SM)

  bool empty() const { return workers.empty(); }
};

// A fresh value for TaskGraph::generation, never given out before in this process.
uint64_t new_graph_generation();

struct TaskGraph {
  std::vector<Task> tasks;
  std::vector<Event> events;
  Schedule schedule;
  // Stamps this content: touch() gives the graph a new stamp after a change to its
  // tasks, events or schedule, which makes every TaskGraphIndex built before the change
  // stale (ir/task_graph_index.h). A copy keeps the stamp; never serialized.
  uint64_t generation = new_graph_generation();

  bool empty() const { return tasks.empty(); }
  void touch() { generation = new_graph_generation(); }
};

struct MachineModel {
  std::string name = "H100-SXM";
  int32_t sm_count = 132;
  int64_t smem_per_sm = 232448;        // bytes usable by one block
  double mem_bandwidth = 3.0e12;       // bytes/s, measured copy bandwidth
  double clock_ghz = 1.98;
  double event_latency_ns = 1000.0;    // release -> visible to a waiter on another SM
  double task_overhead_ns = 500.0;     // fixed cost per task (dispatch, waits)
};

struct Provenance {
  std::string source;        // "preset:tiny", a config.json path, a .mpk path
  std::string pipeline;      // the pass pipeline that produced this module, "" if none
  std::string tool_version;  // "mpk 0.1.0"
};

struct Module {
  std::string name;
  Attrs attrs;  // model-level facts: architecture, batch, max_seq_len, layers, ...
  Program program;
  TaskGraph graph;
  MachineModel machine;
  Provenance provenance;
};

// "mpk <version>", the tool version recorded in every artifact.
std::string tool_version();

// Where each task comes in sequential order among its operator's tasks (docs/ir.md,
// "Tasks"): 0 a fused attention's kv_append tasks that its partials read, 1 the rest,
// 2 attention_merge and argmax_reduce tasks (they read the others' partials), 3 a fused
// attention's kv_append tasks after its attention tasks (one split), which prepare
// position pos's k and v themselves and read only older rows. Indexed by task id.
std::vector<int> task_phases(const Module& m);

}  // namespace mpk

// The operand forms of the operator families that have several (docs/ir.md).
#include "ir/ops/attention.h"
#include "ir/ops/linear.h"
