// Hand-built modules for the IR tests (serialize, text, verifier), independent of the
// importer and the passes, and a field-by-field module comparison.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <limits>

#include "ir/module.h"

namespace mpk::testing {

// tiny_module's task graph: tasks, events and schedule over its program (`tokens` is the
// token tensor argmax_reduce writes).
inline void add_toy_graph(Module& m, TensorId tokens) {
  // One task per operator, each reading and writing whole tensors; argmax has two: the
  // partial of its one vocabulary tile and the reduce, over scratch [1, 1].
  Program& p = m.program;
  const TensorId val = p.add_tensor(Tensor{"argmax_val", DType::kF32, {1, 1}, TensorRole::kScratch});
  const TensorId idx = p.add_tensor(Tensor{"argmax_idx", DType::kI32, {1, 1}, TensorRole::kScratch});
  p.rebuild_use_lists();
  auto whole = [&](TensorId id) { return full_region(id, p.tensors[id].shape); };
  for (OpId i = 0; i < static_cast<OpId>(p.ops.size()); ++i) {
    const Operator& oper = p.ops[i];
    Task task;
    task.op = i;
    task.kind = oper.kind == OpKind::kArgmax ? TaskKind::kArgmaxPartial : *parse_task_kind(name_of(oper.kind));
    for (TensorId in : oper.inputs) task.reads.push_back(whole(in));
    for (TensorId out : oper.outputs) task.writes.push_back(whole(out));
    task.bytes = 100 + i;
    task.flops = 1000 * i;
    if (i == 2) task.attrs = {{"tile", int64_t{8}}, {"note", std::string("x")}, {"w", 0.25}};
    if (oper.kind == OpKind::kArgmax) {
      task.writes = {whole(val), whole(idx)};
      m.graph.tasks.push_back(task);
      task.kind = TaskKind::kArgmaxReduce;
      task.reads = task.writes;
      task.writes = {whole(tokens)};
      task.bytes = 100 + i + 1;
    }
    m.graph.tasks.push_back(std::move(task));
  }
  // Distance-0 events: each task waits on the earlier tasks that write what it reads,
  // one event per consumer; argmax_reduce -> embed at distance 1 (the next token).
  const auto n = static_cast<TaskId>(m.graph.tasks.size());
  for (TaskId c = 0; c < n; ++c) {
    std::vector<TaskId> producers;
    for (TaskId w = 0; w < c; ++w)
      for (const Region& r : m.graph.tasks[c].reads)
        for (const Region& x : m.graph.tasks[w].writes)
          if (r.overlaps(x) && (producers.empty() || producers.back() != w)) producers.push_back(w);
    if (producers.empty()) continue;
    m.graph.events.push_back(Event{producers, {c}, static_cast<int64_t>(producers.size()), 0});
  }
  m.graph.events.push_back(Event{{n - 1}, {0}, 1, 1});
  // Cross-step WAR on the caches and on the activations is implied by the chain
  // through argmax -> embed; the toy checks reads only.
  m.graph.schedule.policy = "round-robin";
  m.graph.schedule.params = {{"seed", int64_t{7}}, {"weight", 0.5}, {"mode", std::string("toy")}};
  m.graph.schedule.workers.resize(2);
  for (TaskId i = 0; i < n; ++i) m.graph.schedule.workers[i % 2].push_back(i);
}

// A one-layer-ish toy step with every operator kind the verifier checks, tasks over
// regions, events at both distances and a schedule on two workers. Valid: the verifier
// accepts it. B=1, H=8, nq=2, nkv=1, hd=4, I=16, V=32, S=4.
//
// Task ids (program order; task i computes operator i, and argmax has two):
//   0 embed        1 input_norm   2 q_proj       3 k_proj       4 v_proj
//   5 q_norm       6 k_norm       7 q_rope       8 k_rope       9 kv_append
//   10 attention   11 o_proj      12 attn_residual 13 post_norm 14 gate_proj
//   15 up_proj     16 silu_mul    17 down_proj   18 mlp_residual 19 final_norm
//   20 lm_head     21 argmax_partial 22 argmax_reduce
// Tensors 36 and 37 are the argmax scratch. Events: one distance-0 event per task with
// inputs written earlier (consumer = that task, producers = the writers), in task
// order, then argmax_reduce -> embed at distance 1.
// Schedule: task i on worker i % 2.
inline Module tiny_module() {
  Module m;
  m.name = "toy \"one\" layer";
  m.attrs = {{"architecture", std::string("qwen3")}, {"batch", int64_t{1}},
             {"rms_eps", 1e-6},                      {"neg", -2.5},
             {"big", 1.0e300},                       {"tiny", 4.9e-324},
             {"pos_inf", std::numeric_limits<double>::infinity()},
             {"neg_inf", -std::numeric_limits<double>::infinity()},
             {"not_a_number", std::numeric_limits<double>::quiet_NaN()},
             {"neg_zero", -0.0},
             {"int_min", std::numeric_limits<int64_t>::min()},
             {"text", std::string("a \"quoted\" back\\slash\nnewline")}};
  m.provenance = {"preset:toy", "decompose,infer-deps", "mpk test"};
  m.machine.name = "toy GPU";
  m.machine.sm_count = 4;
  m.machine.clock_ghz = 1.755;
  m.machine.mem_bandwidth = 3.35e12;

  Program& p = m.program;
  auto t = [&](const std::string& name, DType d, std::vector<int64_t> shape, TensorRole r) {
    return p.add_tensor(Tensor{name, d, std::move(shape), r});
  };
  using D = DType;
  using R = TensorRole;
  const TensorId tokens = t("tokens", D::kI32, {1}, R::kInput);
  const TensorId emb = t("model.embed_tokens.weight", D::kBF16, {32, 8}, R::kWeight);
  const TensorId nw = t("model.layers.0.input_layernorm.weight", D::kBF16, {8}, R::kWeight);
  const TensorId wq = t("model.layers.0.self_attn.q_proj.weight", D::kBF16, {8, 8}, R::kWeight);
  const TensorId wk = t("model.layers.0.self_attn.k_proj.weight", D::kBF16, {4, 8}, R::kWeight);
  const TensorId wv = t("model.layers.0.self_attn.v_proj.weight", D::kBF16, {4, 8}, R::kWeight);
  const TensorId qnw = t("model.layers.0.self_attn.q_norm.weight", D::kBF16, {4}, R::kWeight);
  const TensorId knw = t("model.layers.0.self_attn.k_norm.weight", D::kBF16, {4}, R::kWeight);
  const TensorId wo = t("model.layers.0.self_attn.o_proj.weight", D::kBF16, {8, 8}, R::kWeight);
  const TensorId pw = t("model.layers.0.post_attention_layernorm.weight", D::kBF16, {8}, R::kWeight);
  const TensorId wg = t("model.layers.0.mlp.gate_proj.weight", D::kBF16, {16, 8}, R::kWeight);
  const TensorId wu = t("model.layers.0.mlp.up_proj.weight", D::kBF16, {16, 8}, R::kWeight);
  const TensorId wd = t("model.layers.0.mlp.down_proj.weight", D::kBF16, {8, 16}, R::kWeight);
  const TensorId fw = t("model.norm.weight", D::kBF16, {8}, R::kWeight);
  const TensorId h0 = t("h.0", D::kBF16, {1, 8}, R::kActivation);
  const TensorId xn = t("xn.0", D::kBF16, {1, 8}, R::kActivation);
  const TensorId q = t("q.0", D::kBF16, {1, 8}, R::kActivation);
  const TensorId k = t("k.0", D::kBF16, {1, 4}, R::kActivation);
  const TensorId v = t("v.0", D::kBF16, {1, 4}, R::kActivation);
  const TensorId qn = t("qn.0", D::kBF16, {1, 8}, R::kActivation);
  const TensorId kn = t("kn.0", D::kBF16, {1, 4}, R::kActivation);
  const TensorId qr = t("qr.0", D::kBF16, {1, 8}, R::kActivation);
  const TensorId kr = t("kr.0", D::kBF16, {1, 4}, R::kActivation);
  const TensorId kc = t("k_cache.0", D::kBF16, {1, 4, 1, 4}, R::kKvCache);
  const TensorId vc = t("v_cache.0", D::kBF16, {1, 4, 1, 4}, R::kKvCache);
  const TensorId at = t("attn.0", D::kBF16, {1, 8}, R::kActivation);
  const TensorId o = t("o.0", D::kBF16, {1, 8}, R::kActivation);
  const TensorId hm = t("h_mid.0", D::kBF16, {1, 8}, R::kActivation);
  const TensorId xn2 = t("xn2.0", D::kBF16, {1, 8}, R::kActivation);
  const TensorId g = t("gate.0", D::kBF16, {1, 16}, R::kActivation);
  const TensorId u = t("up.0", D::kBF16, {1, 16}, R::kActivation);
  const TensorId a = t("act.0", D::kBF16, {1, 16}, R::kActivation);
  const TensorId dn = t("down.0", D::kBF16, {1, 8}, R::kActivation);
  const TensorId h1 = t("h.1", D::kBF16, {1, 8}, R::kActivation);
  const TensorId xf = t("xf", D::kBF16, {1, 8}, R::kActivation);
  const TensorId logits = t("logits", D::kF32, {1, 32}, R::kOutput);

  auto op = [&](const std::string& name, OpKind kind, std::vector<TensorId> in,
                std::vector<TensorId> out, Attrs attrs = {}, int32_t layer = 0) {
    return p.add_op(Operator{name, kind, std::move(in), std::move(out), std::move(attrs), layer});
  };
  using K = OpKind;
  const Attrs norm{{"eps", 1e-6}};
  const Attrs qk{{"eps", 1e-6}, {"head_dim", int64_t{4}}};
  const Attrs rope{{"head_dim", int64_t{4}}, {"theta", 1e6}, {"rope_type", std::string("default")}};
  op("embed", K::kEmbedding, {emb, tokens}, {h0}, {}, -1);
  op("L0.input_norm", K::kRmsNorm, {h0, nw}, {xn}, norm);
  op("L0.q_proj", K::kLinear, {xn, wq}, {q});
  op("L0.k_proj", K::kLinear, {xn, wk}, {k});
  op("L0.v_proj", K::kLinear, {xn, wv}, {v});
  op("L0.q_norm", K::kQkNorm, {q, qnw}, {qn}, qk);
  op("L0.k_norm", K::kQkNorm, {k, knw}, {kn}, qk);
  op("L0.q_rope", K::kRope, {qn}, {qr}, rope);
  op("L0.k_rope", K::kRope, {kn}, {kr}, rope);
  op("L0.kv_append", K::kKvAppend, {kr, v}, {kc, vc});
  op("L0.attention", K::kAttention, {qr, kc, vc}, {at},
     {{"num_q_heads", int64_t{2}}, {"num_kv_heads", int64_t{1}}, {"head_dim", int64_t{4}},
      {"scale", 0.5}});
  op("L0.o_proj", K::kLinear, {at, wo}, {o});
  op("L0.attn_residual", K::kResidualAdd, {h0, o}, {hm});
  op("L0.post_norm", K::kRmsNorm, {hm, pw}, {xn2}, norm);
  op("L0.gate_proj", K::kLinear, {xn2, wg}, {g});
  op("L0.up_proj", K::kLinear, {xn2, wu}, {u});
  op("L0.silu_mul", K::kSiluMul, {g, u}, {a});
  op("L0.down_proj", K::kLinear, {a, wd}, {dn});
  op("L0.mlp_residual", K::kResidualAdd, {hm, dn}, {h1});
  op("final_norm", K::kRmsNorm, {h1, fw}, {xf}, norm, -1);
  op("lm_head", K::kLmHead, {xf, emb}, {logits}, {}, -1);
  op("argmax", K::kArgmax, {logits}, {tokens}, {}, -1);
  p.rebuild_use_lists();

  add_toy_graph(m, tokens);
  return m;
}

// Three residual_add tasks in a ring over bf16 [1, 4] tensors: task 0 reads a, writes
// b; task 1 reads b, writes c; task 2 reads c, writes a (so task 0 reads what the later
// task 2 wrote in the previous step); task 3 reads and writes only d -> e (d is a
// weight: no operator writes it). Events:
// 0 -> 1 and 1 -> 2 at distance 0; no event orders 2 before 0 yet (the tests add them).
inline Module ring_module() {
  Module m;
  m.name = "ring";
  Program& p = m.program;
  for (const char* n : {"a", "b", "c", "d", "e"})
    p.add_tensor(Tensor{n, DType::kBF16, {1, 4}, *n == 'd' ? TensorRole::kWeight : TensorRole::kActivation});
  const std::vector<std::array<TensorId, 2>> io = {{0, 1}, {1, 2}, {2, 0}, {3, 4}};
  for (size_t i = 0; i < io.size(); ++i) {
    const auto [in, out] = io[i];
    p.add_op(Operator{"op" + std::to_string(i), OpKind::kResidualAdd, {in, in}, {out}, {}, -1});
    Task t;
    t.op = static_cast<OpId>(i);
    t.kind = TaskKind::kResidualAdd;
    t.reads = {full_region(in, {1, 4})};
    t.writes = {full_region(out, {1, 4})};
    m.graph.tasks.push_back(t);
  }
  p.rebuild_use_lists();
  m.graph.events = {Event{{0}, {1}, 1, 0}, Event{{1}, {2}, 1, 0}};
  return m;
}

// Removes the tensors that no operator uses, renumbering operands (for hand-made
// programs without tasks, which the verifier refuses with unused tensors).
inline void drop_unused_tensors(Program& p) {
  std::vector<TensorId> remap(p.tensors.size(), -1);
  for (const Operator& op : p.ops)
    for (const auto* list : {&op.inputs, &op.outputs})
      for (TensorId t : *list) remap[t] = 0;
  std::vector<Tensor> kept;
  for (size_t t = 0; t < p.tensors.size(); ++t)
    if (remap[t] == 0) {
      remap[t] = static_cast<TensorId>(kept.size());
      kept.push_back(p.tensors[t]);
    }
  p.tensors = std::move(kept);
  for (Operator& op : p.ops)
    for (auto* list : {&op.inputs, &op.outputs})
      for (TensorId& t : *list) t = remap[t];
  p.rebuild_use_lists();
}

// Doubles compare by bit pattern, so NaN equals NaN and -0.0 differs from 0.0; except
// that any NaN equals any NaN (the text form writes every NaN as "nan").
inline bool same_double(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b);
}

inline void expect_attrs_equal(const Attrs& a, const Attrs& b, const std::string& where) {
  ASSERT_EQ(a.size(), b.size()) << where;
  for (auto ia = a.begin(), ib = b.begin(); ia != a.end(); ++ia, ++ib) {
    EXPECT_EQ(ia->first, ib->first) << where;
    ASSERT_EQ(ia->second.index(), ib->second.index()) << where << " attr " << ia->first;
    if (auto* d = std::get_if<double>(&ia->second))
      EXPECT_TRUE(same_double(*d, std::get<double>(ib->second))) << where << " attr " << ia->first;
    else
      EXPECT_TRUE(ia->second == ib->second) << where << " attr " << ia->first;
  }
}

// Field by field, including the derived use lists.
inline void expect_modules_equal(const Module& a, const Module& b) {
  EXPECT_EQ(a.name, b.name);
  expect_attrs_equal(a.attrs, b.attrs, "module");
  ASSERT_EQ(a.program.tensors.size(), b.program.tensors.size());
  for (size_t i = 0; i < a.program.tensors.size(); ++i) {
    const Tensor &x = a.program.tensors[i], &y = b.program.tensors[i];
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.dtype, y.dtype) << x.name;
    EXPECT_EQ(x.shape, y.shape) << x.name;
    EXPECT_EQ(x.role, y.role) << x.name;
  }
  ASSERT_EQ(a.program.ops.size(), b.program.ops.size());
  for (size_t i = 0; i < a.program.ops.size(); ++i) {
    const Operator &x = a.program.ops[i], &y = b.program.ops[i];
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.kind, y.kind) << x.name;
    EXPECT_EQ(x.inputs, y.inputs) << x.name;
    EXPECT_EQ(x.outputs, y.outputs) << x.name;
    EXPECT_EQ(x.layer, y.layer) << x.name;
    expect_attrs_equal(x.attrs, y.attrs, x.name);
  }
  EXPECT_EQ(a.program.writers, b.program.writers);
  EXPECT_EQ(a.program.readers, b.program.readers);
  ASSERT_EQ(a.graph.tasks.size(), b.graph.tasks.size());
  for (size_t i = 0; i < a.graph.tasks.size(); ++i) {
    const Task &x = a.graph.tasks[i], &y = b.graph.tasks[i];
    const std::string where = "task " + std::to_string(i);
    EXPECT_EQ(x.op, y.op) << where;
    EXPECT_EQ(x.kind, y.kind) << where;
    EXPECT_EQ(x.reads, y.reads) << where;
    EXPECT_EQ(x.writes, y.writes) << where;
    EXPECT_EQ(x.bytes, y.bytes) << where;
    EXPECT_EQ(x.flops, y.flops) << where;
    expect_attrs_equal(x.attrs, y.attrs, where);
  }
  ASSERT_EQ(a.graph.events.size(), b.graph.events.size());
  for (size_t i = 0; i < a.graph.events.size(); ++i) {
    const Event &x = a.graph.events[i], &y = b.graph.events[i];
    EXPECT_EQ(x.producers, y.producers) << "event " << i;
    EXPECT_EQ(x.consumers, y.consumers) << "event " << i;
    EXPECT_EQ(x.target, y.target) << "event " << i;
    EXPECT_EQ(x.step_distance, y.step_distance) << "event " << i;
  }
  EXPECT_EQ(a.graph.schedule.policy, b.graph.schedule.policy);
  expect_attrs_equal(a.graph.schedule.params, b.graph.schedule.params, "schedule");
  EXPECT_EQ(a.graph.schedule.workers, b.graph.schedule.workers);
  EXPECT_EQ(a.machine.name, b.machine.name);
  EXPECT_EQ(a.machine.sm_count, b.machine.sm_count);
  EXPECT_EQ(a.machine.smem_per_sm, b.machine.smem_per_sm);
  EXPECT_TRUE(same_double(a.machine.mem_bandwidth, b.machine.mem_bandwidth));
  EXPECT_TRUE(same_double(a.machine.clock_ghz, b.machine.clock_ghz));
  EXPECT_TRUE(same_double(a.machine.event_latency_ns, b.machine.event_latency_ns));
  EXPECT_TRUE(same_double(a.machine.task_overhead_ns, b.machine.task_overhead_ns));
  EXPECT_EQ(a.provenance.source, b.provenance.source);
  EXPECT_EQ(a.provenance.pipeline, b.provenance.pipeline);
  EXPECT_EQ(a.provenance.tool_version, b.provenance.tool_version);
}

}  // namespace mpk::testing
