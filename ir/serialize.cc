// The one bridge between the in-memory IR (ir/module.h) and ir/mpk.proto: conversion
// both ways with id, enum and version checks, atomic saving, and loading of binary or
// text modules. No other translation unit includes ir/mpk.pb.h.
#include "ir/serialize.h"

#include <google/protobuf/stubs/logging.h>

#include "ir/file_io.h"
#include "ir/mpk.pb.h"
#include "ir/text.h"
#include "ir/verifier.h"

namespace mpk {
namespace {

constexpr int kNewestIrVersion = kIrVersion;
static_assert(kIrVersion == pb::IR_VERSION_1, "kIrVersion must be the newest IrVersion entry");

// mpk.proto's OpKind and TaskKind are the rows of ir/kinds.def, in order, from 1: a row
// without its proto value, or a proto value without its row, does not compile.
#define MPK_OP_KIND(Name, name, family, proto, rgb)                                  \
  static_assert(pb::proto == static_cast<int>(OpKind::k##Name) + 1, "mpk.proto: " #proto \
                " must be OpKind::k" #Name " + 1 (ir/kinds.def)");
#define MPK_TASK_KIND(Name, name, family, proto, stage, streams)                       \
  static_assert(pb::proto == static_cast<int>(TaskKind::k##Name) + 1, "mpk.proto: " #proto \
                " must be TaskKind::k" #Name " + 1 (ir/kinds.def)");
#include "ir/kinds.def"
static_assert(pb::OpKind_ARRAYSIZE == kNumOpKinds + 1 && pb::TaskKind_ARRAYSIZE == kNumTaskKinds + 1,
              "mpk.proto has an OpKind or TaskKind value that ir/kinds.def lacks");

// ---- in-memory -> proto ----

void attrs_to_proto(const Attrs& attrs, google::protobuf::RepeatedPtrField<pb::Attr>* out) {
  for (const auto& [key, value] : attrs) {
    pb::Attr* a = out->Add();
    a->set_key(key);
    if (auto* i = std::get_if<int64_t>(&value))
      a->set_int_value(*i);
    else if (auto* d = std::get_if<double>(&value))
      a->set_float_value(*d);
    else
      a->set_string_value(std::get<std::string>(value));
  }
}

void region_to_proto(const Region& r, pb::Region* out) {
  out->set_tensor(r.tensor);
  for (const Range& d : r.dims) {
    pb::Range* pr = out->add_dims();
    pr->set_lo(d.lo);
    pr->set_hi(d.hi);
  }
}

// In-memory enums are 0-based, proto enums reserve 0 for "unset".
template <typename E>
int to_proto_enum(E e) {
  return static_cast<int>(e) + 1;
}

void module_to_proto(const Module& m, pb::Module* out) {
  out->set_version(static_cast<pb::IrVersion>(kNewestIrVersion));
  out->set_name(m.name);
  attrs_to_proto(m.attrs, out->mutable_attrs());

  pb::Program* prog = out->mutable_program();
  for (const Tensor& t : m.program.tensors) {
    pb::Tensor* pt = prog->add_tensors();
    pt->set_name(t.name);
    pt->set_dtype(static_cast<pb::DType>(to_proto_enum(t.dtype)));
    for (int64_t s : t.shape) pt->add_shape(s);
    pt->set_role(static_cast<pb::TensorRole>(to_proto_enum(t.role)));
  }
  for (const Operator& op : m.program.ops) {
    pb::Operator* po = prog->add_operators();
    po->set_name(op.name);
    po->set_kind(static_cast<pb::OpKind>(to_proto_enum(op.kind)));
    attrs_to_proto(op.attrs, po->mutable_attrs());
    for (TensorId t : op.inputs) po->add_inputs(t);
    for (TensorId t : op.outputs) po->add_outputs(t);
    po->set_layer(op.layer);
  }

  pb::TaskGraph* graph = out->mutable_task_graph();
  for (const Task& t : m.graph.tasks) {
    pb::Task* pt = graph->add_tasks();
    pt->set_op(t.op);
    pt->set_kind(static_cast<pb::TaskKind>(to_proto_enum(t.kind)));
    for (const Region& r : t.reads) region_to_proto(r, pt->add_reads());
    for (const Region& r : t.writes) region_to_proto(r, pt->add_writes());
    pt->set_bytes(t.bytes);
    pt->set_flops(t.flops);
    attrs_to_proto(t.attrs, pt->mutable_attrs());
  }
  for (const Event& e : m.graph.events) {
    pb::Event* pe = graph->add_events();
    for (TaskId t : e.producers) pe->add_producers(t);
    for (TaskId t : e.consumers) pe->add_consumers(t);
    pe->set_target(e.target);
    pe->set_step_distance(e.step_distance);
    pe->set_all_ranks(e.all_ranks);
  }
  pb::Schedule* sched = graph->mutable_schedule();
  sched->set_policy(m.graph.schedule.policy);
  attrs_to_proto(m.graph.schedule.params, sched->mutable_params());
  for (const auto& worker : m.graph.schedule.workers) {
    pb::Worker* pw = sched->add_workers();
    for (TaskId t : worker) pw->add_tasks(t);
  }

  pb::MachineModel* mm = out->mutable_machine();
  mm->set_name(m.machine.name);
  mm->set_sm_count(m.machine.sm_count);
  mm->set_smem_per_sm(m.machine.smem_per_sm);
  mm->set_mem_bandwidth(m.machine.mem_bandwidth);
  mm->set_clock_ghz(m.machine.clock_ghz);
  mm->set_event_latency_ns(m.machine.event_latency_ns);
  mm->set_task_overhead_ns(m.machine.task_overhead_ns);

  pb::Provenance* pv = out->mutable_provenance();
  pv->set_source(m.provenance.source);
  pv->set_pipeline(m.provenance.pipeline);
  pv->set_tool_version(m.provenance.tool_version);
}

// ---- proto -> in-memory, checking ids and enums ----

class Reader {
 public:
  explicit Reader(const std::string& source) : source_(source) {}

  [[noreturn]] void fail(const std::string& what) const { throw Error(source_ + ": " + what); }

  Attrs attrs(const google::protobuf::RepeatedPtrField<pb::Attr>& in, const std::string& where) {
    Attrs out;
    for (const pb::Attr& a : in) {
      AttrValue v;
      switch (a.value_case()) {
        case pb::Attr::kIntValue:
          v = static_cast<int64_t>(a.int_value());
          break;
        case pb::Attr::kFloatValue:
          v = a.float_value();
          break;
        case pb::Attr::kStringValue:
          v = a.string_value();
          break;
        case pb::Attr::VALUE_NOT_SET:
          fail(where + " attribute '" + a.key() + "' has no value");
      }
      if (!out.emplace(a.key(), std::move(v)).second)
        fail(where + " has attribute '" + a.key() + "' twice");
    }
    return out;
  }

  // Maps a proto enum value (1..count) to the 0-based in-memory enum.
  template <typename E>
  E enum_value(int v, int count, const std::string& what) {
    if (v < 1 || v > count)
      fail(what + " has unknown value " + std::to_string(v) + " (known: 1.." +
           std::to_string(count) + ")");
    return static_cast<E>(v - 1);
  }

  int32_t id(int64_t v, size_t count, const std::string& what, const std::string& kind) {
    if (v < 0 || static_cast<uint64_t>(v) >= count)
      fail(what + " refers to " + kind + " " + std::to_string(v) + ", but there are " +
           std::to_string(count) + " " + kind + "s");
    return static_cast<int32_t>(v);
  }

  Region region(const pb::Region& in, size_t num_tensors, const std::string& what) {
    Region r;
    r.tensor = id(in.tensor(), num_tensors, what, "tensor");
    r.dims.reserve(in.dims_size());
    for (const pb::Range& d : in.dims()) r.dims.push_back({d.lo(), d.hi()});
    return r;
  }

  Module module(const pb::Module& in) {
    const int version = in.version();
    if (version == pb::IR_VERSION_UNSPECIFIED) fail("missing IR version");
    if (version > kNewestIrVersion)
      fail("written by a newer mpk: IR version " + std::to_string(version) +
           ", this build reads up to " + std::to_string(kNewestIrVersion));
    if (version < 0) fail("invalid IR version " + std::to_string(version));

    Module m;
    m.name = in.name();
    m.attrs = attrs(in.attrs(), "module");

    const pb::Program& prog = in.program();
    const size_t nt = prog.tensors_size();
    m.program.tensors.reserve(nt);
    for (int i = 0; i < prog.tensors_size(); ++i) {
      const pb::Tensor& pt = prog.tensors(i);
      const std::string where = "tensor " + std::to_string(i) + " '" + pt.name() + "'";
      Tensor t;
      t.name = pt.name();
      t.dtype = enum_value<DType>(pt.dtype(), 4, where + " dtype");
      t.shape.assign(pt.shape().begin(), pt.shape().end());
      t.role = enum_value<TensorRole>(pt.role(), 6, where + " role");
      m.program.tensors.push_back(std::move(t));
    }
    m.program.ops.reserve(prog.operators_size());
    for (int i = 0; i < prog.operators_size(); ++i) {
      const pb::Operator& po = prog.operators(i);
      const std::string where = "operator " + std::to_string(i) + " '" + po.name() + "'";
      Operator op;
      op.name = po.name();
      op.kind = enum_value<OpKind>(po.kind(), kNumOpKinds, where + " kind");
      op.attrs = attrs(po.attrs(), where);
      for (int j = 0; j < po.inputs_size(); ++j)
        op.inputs.push_back(id(po.inputs(j), nt, where + " input " + std::to_string(j), "tensor"));
      for (int j = 0; j < po.outputs_size(); ++j)
        op.outputs.push_back(
            id(po.outputs(j), nt, where + " output " + std::to_string(j), "tensor"));
      op.layer = po.layer();
      m.program.ops.push_back(std::move(op));
    }

    const pb::TaskGraph& graph = in.task_graph();
    const size_t ntasks = graph.tasks_size();
    m.graph.tasks.reserve(ntasks);
    for (int i = 0; i < graph.tasks_size(); ++i) {
      const pb::Task& pt = graph.tasks(i);
      const std::string where = "task " + std::to_string(i);
      Task t;
      t.op = id(pt.op(), m.program.ops.size(), where + " op", "operator");
      t.kind = enum_value<TaskKind>(pt.kind(), kNumTaskKinds, where + " kind");
      for (int j = 0; j < pt.reads_size(); ++j)
        t.reads.push_back(region(pt.reads(j), nt, where + " read " + std::to_string(j)));
      for (int j = 0; j < pt.writes_size(); ++j)
        t.writes.push_back(region(pt.writes(j), nt, where + " write " + std::to_string(j)));
      t.bytes = pt.bytes();
      t.flops = pt.flops();
      t.attrs = attrs(pt.attrs(), where);
      m.graph.tasks.push_back(std::move(t));
    }
    m.graph.events.reserve(graph.events_size());
    for (int i = 0; i < graph.events_size(); ++i) {
      const pb::Event& pe = graph.events(i);
      const std::string where = "event " + std::to_string(i);
      Event e;
      for (int32_t t : pe.producers()) e.producers.push_back(id(t, ntasks, where + " producer", "task"));
      for (int32_t t : pe.consumers()) e.consumers.push_back(id(t, ntasks, where + " consumer", "task"));
      e.target = pe.target();
      e.step_distance = pe.step_distance();
      e.all_ranks = pe.all_ranks();
      m.graph.events.push_back(std::move(e));
    }
    const pb::Schedule& sched = graph.schedule();
    m.graph.schedule.policy = sched.policy();
    m.graph.schedule.params = attrs(sched.params(), "schedule");
    for (int w = 0; w < sched.workers_size(); ++w) {
      std::vector<TaskId> list;
      list.reserve(sched.workers(w).tasks_size());
      for (int32_t t : sched.workers(w).tasks())
        list.push_back(id(t, ntasks, "schedule worker " + std::to_string(w), "task"));
      m.graph.schedule.workers.push_back(std::move(list));
    }

    const pb::MachineModel& mm = in.machine();
    m.machine.name = mm.name();
    m.machine.sm_count = mm.sm_count();
    m.machine.smem_per_sm = mm.smem_per_sm();
    m.machine.mem_bandwidth = mm.mem_bandwidth();
    m.machine.clock_ghz = mm.clock_ghz();
    m.machine.event_latency_ns = mm.event_latency_ns();
    m.machine.task_overhead_ns = mm.task_overhead_ns();

    m.provenance.source = in.provenance().source();
    m.provenance.pipeline = in.provenance().pipeline();
    m.provenance.tool_version = in.provenance().tool_version();

    m.program.rebuild_use_lists();
    return m;
  }

 private:
  std::string source_;
};

void verify_named(const Module& m, const std::string& source) {
  try {
    verify_or_throw(m);
  } catch (const Error& e) {
    throw Error(source + ": " + e.what());
  }
}

bool looks_like_text(const std::string& content) {
  static constexpr std::string_view kHeader = "mpk.module";
  size_t i = 0;
  // Skip blank lines and '#' comment lines before the header.
  while (i < content.size()) {
    if (content[i] == ' ' || content[i] == '\t' || content[i] == '\r' || content[i] == '\n') {
      ++i;
    } else if (content[i] == '#') {
      while (i < content.size() && content[i] != '\n') ++i;
    } else {
      break;
    }
  }
  return content.compare(i, kHeader.size(), kHeader) == 0;
}

}  // namespace

std::string module_to_binary(const Module& m) {
  pb::Module proto;
  module_to_proto(m, &proto);
  std::string out;
  if (!proto.SerializeToString(&out)) throw Error("module '" + m.name + "' could not be serialized");
  return out;
}

Module module_from_binary(const std::string& bytes, const std::string& source) {
  pb::Module proto;
  // The parser logs why it fails (e.g. a string that is not UTF-8) to stderr: the error
  // below is the one line a malformed file gets.
  const google::protobuf::LogSilencer quiet;
  if (!proto.ParseFromString(bytes))
    throw Error(source + ": not a valid mpk module (malformed protobuf, " +
                std::to_string(bytes.size()) + " bytes)");
  Module m = Reader(source).module(proto);
  verify_named(m, source);
  return m;
}

void save_module(const Module& m, const std::string& path, Format format) {
  write_file_safely(path, format == Format::kBinary ? module_to_binary(m) : print_module(m));
}

Module load_module(const std::string& path) {
  const std::string content = read_file_bounded(path, kMaxModuleBytes, "module");
  if (looks_like_text(content)) {
    Module m = parse_module(content, path);
    verify_named(m, path);
    return m;
  }
  return module_from_binary(content, path);
}

}  // namespace mpk
