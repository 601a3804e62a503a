// Tests of the decompose pass: for every preset and several tile options, the tasks of
// each operator write its outputs (and its scratch) exactly once, every read and write
// region is the one docs/ir.md's task table gives, auto tiles follow the machine model,
// attention splits into partial + merge tasks, and bad options are rejected by name.
#include <gtest/gtest.h>

#include <map>

#include "ir/error.h"
#include "ir/import/import.h"
#include "ir/verifier.h"
#include "passes/pass_manager.h"
#include "passes/pipeline.h"
#include "passes/registry.h"

namespace mpk {
namespace {

Module imported(const std::string& preset, int64_t batch = 1, int64_t seq = 0, int32_t sms = 132) {
  ImportOptions o;
  o.batch = batch;
  o.max_seq_len = seq;
  o.machine.sm_count = sms;
  return build_module(*find_preset(preset), o, "preset:" + preset);
}

// Every fusion, as the CPU bit-identity tests run them.
const char* const kAllFusions = kDefaultFusions;

void fuse(Module& m, const std::string& pipeline) {
  PassManagerConfig cfg;
  cfg.verify_each = true;
  PassManager(parse_pipeline(pipeline), cfg).run(m);
}

void decompose(Module& m, const PassOptions& opts = {}) {
  PassResult r = find_pass("decompose")->create(opts)->run(m);
  if (r.error) throw Error(*r.error);
  EXPECT_TRUE(r.changed);
}

Region reg(TensorId t, std::vector<Range> dims) { return Region{t, std::move(dims)}; }

std::vector<const Task*> tasks_of(const Module& m, const std::string& op) {
  const OpId id = m.program.find_op(op);
  std::vector<const Task*> out;
  for (const Task& t : m.graph.tasks)
    if (t.op == id) out.push_back(&t);
  return out;
}

// The reads and writes docs/ir.md prescribes for task `t`, given the slice it writes
// (its first write region) and, for attention partials, its position range.
struct Expected {
  std::vector<Region> reads, writes;
};

// kv_append tasks (of a kv_append, or of a fused attention) and attention tasks.
Expected expected_attention_regions(const Module& m, const Task& t) {
  const Program& p = m.program;
  const Operator& op = p.ops.at(t.op);
  const Region& w0 = t.writes.at(0);
  const AttentionForm f = attention_form(op);
  const TensorId kc = op.kind == OpKind::kKvAppend ? op.outputs[0] : f.k_cache;
  const TensorId vc = op.kind == OpKind::kKvAppend ? op.outputs[1] : f.v_cache;
  const auto cs = p.tensor(kc).shape;
  const int64_t s = cs[1], hd = cs[3];
  const Range b = w0.dims.at(0);  // the task's block of batch rows (attention-rows)
  auto cache = [&](TensorId c, int64_t h, Range pos) { return reg(c, {b, pos, {h, h + 1}, {0, hd}}); };
  auto norm = [&](TensorId w) { return reg(w, {{0, hd}}); };
  if (t.kind == TaskKind::kKvAppend) {
    const int64_t h = w0.dims.at(2).lo;
    const Range cols{h * hd, (h + 1) * hd};
    const TensorId k = op.kind == OpKind::kKvAppend ? op.inputs[0] : f.k;
    const TensorId v = op.kind == OpKind::kKvAppend ? op.inputs[1] : f.v;
    std::vector<Region> reads = {reg(k, {b, cols}), reg(v, {b, cols})};
    if (f.k_norm >= 0) reads.push_back(norm(f.k_norm));
    return {reads, {cache(kc, h, {0, s}), cache(vc, h, {0, s})}};
  }
  const int64_t g = attr_int(op.attrs, "num_q_heads") / attr_int(op.attrs, "num_kv_heads");
  const TensorId part = p.find_tensor("attn_part." + std::to_string(op.layer));
  const int64_t h = t.kind == TaskKind::kAttentionPartial ? w0.dims.at(1).lo / g : w0.dims.at(1).lo / (g * hd);
  const Range qc{h * g * hd, (h + 1) * g * hd}, qh{h * g, (h + 1) * g}, kcols{h * hd, (h + 1) * hd};
  if (t.kind == TaskKind::kAttentionMerge) {
    const int64_t splits = p.tensor(part).shape.at(2);
    return {{reg(part, {b, qh, {0, splits}, {0, hd + 2}})}, {reg(f.y, {b, qc})}};
  }
  std::vector<Region> reads = {reg(f.q, {b, qc})};
  if (t.kind == TaskKind::kAttention) {
    // Whole query heads of kv head h: all of its group (a fused task then appends the kv
    // head itself) or some of them (the operator's kv_append tasks append it).
    const Range heads = w0.dims.at(1);
    EXPECT_EQ(heads.lo % hd, 0) << op.name << ": not whole query heads";
    EXPECT_EQ(heads.hi % hd, 0) << op.name << ": not whole query heads";
    EXPECT_TRUE(heads.lo >= qc.lo && heads.hi <= qc.hi && !heads.empty()) << op.name << ": not one kv head's";
    reads = {reg(f.q, {b, heads})};
    std::vector<Region> writes = {reg(f.y, {b, heads})};
    if (f.fused()) {
      reads.insert(reads.end(), {reg(f.k, {b, kcols}), reg(f.v, {b, kcols})});
      if (f.q_norm >= 0) reads.insert(reads.end(), {norm(f.q_norm), norm(f.k_norm)});
      if (heads == qc) writes.insert(writes.end(), {cache(kc, h, {0, s}), cache(vc, h, {0, s})});
    }
    reads.insert(reads.end(), {cache(kc, h, {0, s}), cache(vc, h, {0, s})});
    return {reads, writes};
  }
  if (f.q_norm >= 0) reads.push_back(norm(f.q_norm));
  const Range pos = t.reads.at(reads.size()).dims.at(1);
  reads.insert(reads.end(), {cache(kc, h, pos), cache(vc, h, pos)});
  return {reads, {reg(part, {b, qh, w0.dims.at(2), {0, hd + 2}})}};
}

Expected expected_regions(const Module& m, const Task& t) {
  const Program& p = m.program;
  const Operator& op = p.ops.at(t.op);
  const auto& in = op.inputs;
  const auto& out = op.outputs;
  const Region& w0 = t.writes.at(0);
  auto shape = [&](TensorId id) { return p.tensor(id).shape; };
  const int64_t b = shape(out[0]).empty() ? 0 : shape(out[0])[0];
  switch (t.kind) {
    case TaskKind::kEmbedding: {
      const Range c = w0.dims.at(1);
      return {{reg(in[0], {{0, shape(in[0])[0]}, c}), reg(in[1], {{0, b}})},
              {reg(out[0], {{0, b}, c})}};
    }
    case TaskKind::kRmsNorm:
      return {{full_region(in[0], shape(in[0])), full_region(in[1], shape(in[1]))},
              {full_region(out[0], shape(out[0]))}};
    case TaskKind::kLinear:
    case TaskKind::kLmHead: {
      const LinearForm f = linear_form(op);
      const Range n = w0.dims.at(1);
      const int64_t k = shape(f.x)[1];
      std::vector<Region> reads = {reg(f.x, {{0, b}, {0, k}}), reg(f.weight, {n, {0, k}})};
      if (f.swiglu()) reads.push_back(reg(f.up, {n, {0, k}}));
      if (f.residual >= 0) reads.push_back(reg(f.residual, {{0, b}, n}));
      if (f.norm >= 0) reads.push_back(reg(f.norm, {{0, k}}));
      if (f.bias >= 0) reads.push_back(reg(f.bias, {n}));
      std::vector<Region> writes = {reg(f.y, {{0, b}, n})};
      if (f.tokens >= 0) {
        const Range part = t.writes.at(1).dims.at(1);
        writes.push_back(reg(p.find_tensor("argmax_val"), {{0, b}, part}));
        writes.push_back(reg(p.find_tensor("argmax_idx"), {{0, b}, part}));
      }
      return {reads, writes};
    }
    case TaskKind::kQkNorm:
    case TaskKind::kRope: {
      const Range c = w0.dims.at(1);
      const int64_t hd = attr_int(op.attrs, "head_dim");
      EXPECT_EQ(c.lo % hd, 0) << op.name << ": not whole heads";
      EXPECT_EQ(c.hi % hd, 0) << op.name << ": not whole heads";
      std::vector<Region> reads = {reg(in[0], {{0, b}, c})};
      if (t.kind == TaskKind::kQkNorm) reads.push_back(reg(in[1], {{0, hd}}));
      return {reads, {reg(out[0], {{0, b}, c})}};
    }
    case TaskKind::kKvAppend:
    case TaskKind::kAttention:
    case TaskKind::kAttentionPartial:
    case TaskKind::kAttentionMerge:
      return expected_attention_regions(m, t);
    case TaskKind::kSiluMul:
    case TaskKind::kResidualAdd:
    case TaskKind::kAllReduce: {
      const Range c = w0.dims.at(1);
      return {{reg(in[0], {{0, b}, c}), reg(in[1], {{0, b}, c})}, {reg(out[0], {{0, b}, c})}};
    }
    case TaskKind::kArgmaxPartial: {
      const TensorId val = p.find_tensor("argmax_val"), idx = p.find_tensor("argmax_idx");
      const Range v = t.reads.at(0).dims.at(1);
      const Range part = w0.dims.at(1);
      return {{reg(in[0], {{0, b}, v})},
              {reg(val, {{0, b}, part}), reg(idx, {{0, b}, part})}};
    }
    case TaskKind::kArgmaxReduce: {
      const TensorId val = p.find_tensor("argmax_val"), idx = p.find_tensor("argmax_idx");
      const int64_t parts = p.tensor(val).shape.at(1);
      const TensorId tokens = op.kind == OpKind::kArgmax ? out[0] : linear_form(op).tokens;
      return {{reg(val, {{0, b}, {0, parts}}), reg(idx, {{0, b}, {0, parts}})}, {reg(tokens, {{0, b}})}};
    }
  }
  ADD_FAILURE() << "unknown task kind";
  return {};
}

bool in_bounds(const Region& r, const Tensor& t) {
  if (r.dims.size() != t.shape.size()) return false;
  for (size_t i = 0; i < r.dims.size(); ++i)
    if (r.dims[i].lo < 0 || r.dims[i].hi > t.shape[i] || r.dims[i].empty()) return false;
  return true;
}

// The full set of checks of one decomposed module.
void check_decomposition(const Module& m, const std::string& what) {
  SCOPED_TRACE(what);
  const Program& p = m.program;
  ASSERT_FALSE(m.graph.tasks.empty());
  EXPECT_TRUE(m.graph.events.empty());
  EXPECT_TRUE(m.graph.schedule.empty());

  // Program order, every region inside its tensor, the docs/ir.md regions.
  OpId prev = 0;
  std::vector<int> tasks_per_op(p.ops.size(), 0);
  for (size_t i = 0; i < m.graph.tasks.size(); ++i) {
    const Task& t = m.graph.tasks[i];
    ASSERT_GE(t.op, prev) << "task " << i << " out of program order";
    ASSERT_LT(t.op, static_cast<OpId>(p.ops.size()));
    prev = t.op;
    ++tasks_per_op[t.op];
    for (const auto* list : {&t.reads, &t.writes})
      for (const Region& r : *list)
        ASSERT_TRUE(in_bounds(r, p.tensor(r.tensor)))
            << "task " << i << ": " << format_region(p.tensor(r.tensor).name, r);
    const Expected e = expected_regions(m, t);
    EXPECT_EQ(t.reads, e.reads) << "task " << i << " of " << p.ops[t.op].name << " reads";
    EXPECT_EQ(t.writes, e.writes) << "task " << i << " of " << p.ops[t.op].name << " writes";
    EXPECT_GT(t.bytes, 0) << "task " << i;
    const bool copy = t.kind == TaskKind::kEmbedding ||
                      (t.kind == TaskKind::kKvAppend && p.ops[t.op].kind == OpKind::kKvAppend);
    EXPECT_EQ(t.flops > 0, !copy) << "task " << i << " " << name_of(t.kind);
  }
  for (size_t o = 0; o < p.ops.size(); ++o) EXPECT_GT(tasks_per_op[o], 0) << p.ops[o].name;

  // Per operator: the writes to each tensor are disjoint and cover it; the tensors
  // written are the operator's outputs plus scratch.
  // The shares of a cooperative linear (docs/ir.md) each declare the whole output: count
  // it once, share 0's.
  std::map<std::pair<OpId, TensorId>, std::vector<const Region*>> writes;
  for (const Task& t : m.graph.tasks)
    for (const Region& r : t.writes)
      if (coop_share(t).share == 0 || r.tensor != linear_form(p.ops[t.op]).y) writes[{t.op, r.tensor}].push_back(&r);
  std::vector<int> outputs_covered(p.ops.size(), 0);
  for (const auto& [key, regions] : writes) {
    const auto& [op, tensor] = key;
    const Tensor& tt = p.tensor(tensor);
    const auto& outs = p.ops[op].outputs;
    const bool is_output = std::find(outs.begin(), outs.end(), tensor) != outs.end();
    EXPECT_TRUE(is_output || tt.role == TensorRole::kScratch)
        << p.ops[op].name << " writes " << tt.name;
    outputs_covered[op] += is_output;
    int64_t volume = 0;
    for (size_t i = 0; i < regions.size(); ++i) {
      volume += regions[i]->volume();
      for (size_t j = i + 1; j < regions.size(); ++j)
        ASSERT_FALSE(regions[i]->overlaps(*regions[j]))
            << p.ops[op].name << ": two tasks write " << format_region(tt.name, *regions[i]);
    }
    EXPECT_EQ(volume, tt.num_elements()) << p.ops[op].name << " does not cover " << tt.name;
  }
  for (size_t o = 0; o < p.ops.size(); ++o)
    EXPECT_EQ(outputs_covered[o], static_cast<int>(p.ops[o].outputs.size())) << p.ops[o].name;

  // Attention partials of one kv head (of a block of batch rows) read the whole cache
  // (their positions follow the step), in split order; argmax partials (of an argmax, or the lm_head tasks of an lm_head with argmax)
  // tile [0, V) in partial order.
  for (const Operator& op : p.ops) {
    const bool argmax_partials = op.kind == OpKind::kArgmax || linear_form(op).tokens >= 0;
    if (op.kind != OpKind::kAttention && !argmax_partials) continue;
    std::map<int64_t, int64_t> next;  // kv head (attention) or 0 (argmax) -> next position
    for (const Task* t : tasks_of(m, op.name)) {
      if (t->kind == TaskKind::kAttentionPartial) {
        const Region& kr = *std::find_if(t->reads.begin(), t->reads.end(), [&](const Region& r) {
          return r.tensor == attention_form(op).k_cache;
        });
        const int64_t h = kr.dims[2].lo + (kr.dims[0].lo << 20);  // (row block, kv head)
        EXPECT_EQ(kr.dims[1], (Range{0, p.tensor(kr.tensor).shape[1]})) << op.name;
        EXPECT_EQ(t->writes[0].dims[2].lo, next[-1 - h]++) << op.name << " split index";
      } else if (coop_share(*t).cooperative()) {  // a share's partial is its own slot
        EXPECT_EQ(t->writes[1].dims[1].lo, coop_share(*t).share) << op.name;
        EXPECT_EQ(t->writes[0].dims[1], (Range{0, p.tensor(op.outputs[0]).shape[1]})) << op.name;
        next[0] = t->writes[0].dims[1].hi;
        ++next[1];
      } else if (t->kind == TaskKind::kArgmaxPartial || t->kind == TaskKind::kLmHead) {
        const bool head = t->kind == TaskKind::kLmHead;  // its vocab rows: the logits it writes
        const Range vocab = head ? t->writes[0].dims[1] : t->reads[0].dims[1];
        EXPECT_EQ(vocab.lo, next[0]) << op.name;
        EXPECT_EQ(t->writes[head ? 1 : 0].dims[1].lo, next[1]++) << op.name << " partial index";
        next[0] = vocab.hi;
      }
    }
    if (argmax_partials) {
      EXPECT_EQ(next[0], p.tensor(linear_form(op).tokens >= 0 ? op.outputs[0] : op.inputs[0]).shape[1]) << op.name;
      EXPECT_EQ(next[1], p.tensor(p.find_tensor("argmax_val")).shape[1]) << op.name;
    }
  }
}

struct Case {
  std::string preset;
  PassOptions options;
  int64_t batch = 1, seq = 0;
  int32_t sms = 132;
  std::string fuse = "";  // a fusion pipeline run before decompose
};

// One line per case in test listings (a byte dump would break ctest's test discovery).
void PrintTo(const Case& c, std::ostream* os) {
  *os << c.preset << " batch=" << c.batch << " seq=" << c.seq << " sms=" << c.sms;
  if (!c.fuse.empty()) *os << " fuse=" << c.fuse;
  for (const auto& [k, v] : c.options) *os << " " << k << "=" << v;
}

class DecomposeCoverage : public testing::TestWithParam<Case> {};

TEST_P(DecomposeCoverage, TasksCoverOutputsWithTheSpecifiedRegions) {
  const Case& c = GetParam();
  Module m = imported(c.preset, c.batch, c.seq, c.sms);
  if (!c.fuse.empty()) fuse(m, c.fuse);
  decompose(m, c.options);
  std::string what = c.preset + " " + c.fuse;
  for (const auto& [k, v] : c.options) what += " " + k + "=" + v;
  check_decomposition(m, what);
}

INSTANTIATE_TEST_SUITE_P(
    Presets, DecomposeCoverage,
    testing::Values(
        Case{"tiny", {}}, Case{"tiny-qwen3", {}}, Case{"llama-3.2-1b", {}}, Case{"qwen3-8b", {}},
        Case{"tiny", {{"tile", "100"}, {"elementwise-tile", "100"}, {"argmax-tile", "100"}}},
        Case{"tiny-qwen3",
             {{"tile", "1"}, {"lm-head-tile", "7"}, {"elementwise-tile", "1"},
              {"attention-splits", "3"}, {"argmax-tile", "5"}},
             3},
        Case{"tiny", {{"attention-splits", "128"}}, 2},
        Case{"tiny-qwen3", {{"tile", "100000"}, {"argmax-tile", "512"}}, 8, 40},
        Case{"llama-3.2-1b", {{"attention-splits", "1"}, {"tile", "512"}}, 4, 2048},
        Case{"qwen3-8b", {{"attention-splits", "7"}, {"lm-head-tile", "4096"}}, 2, 0, 16},
        Case{"tiny", {}, 1, 0, 1},
        Case{"tiny", {}, 1, 0, 132, kAllFusions},
        Case{"tiny-qwen3", {{"attention-splits", "3"}, {"lm-head-tile", "7"}}, 3, 0, 132, kAllFusions},
        Case{"tiny-qwen3", {{"tile", "100"}, {"attention-splits", "128"}}, 2, 0, 132, kAllFusions},
        Case{"tiny-qwen2", {}, 2}, Case{"tiny-qwen2", {{"tile", "24"}}, 3, 0, 132, kAllFusions},
        Case{"llama-3.2-1b", {}, 1, 0, 132, kAllFusions},
        Case{"qwen3-8b", {{"attention-splits", "7"}}, 2, 0, 16, kAllFusions}));

TEST(Decompose, AutoTilesSpreadOverAllSms) {
  Module m = imported("llama-3.2-1b");
  decompose(m, {{"coop", "off"}});
  EXPECT_EQ(tasks_of(m, "L0.q_proj").size(), 128u);   // 2048 / 16
  EXPECT_EQ(tasks_of(m, "L0.k_proj").size(), 64u);    // 512 / 8 (minimum 8)
  EXPECT_EQ(tasks_of(m, "L0.gate_proj").size(), 128u);  // 8192 / 64
  const auto head = tasks_of(m, "lm_head");
  ASSERT_EQ(head.size(), 132u);  // 128256 in tiles of 976
  EXPECT_EQ(head.front()->writes[0].dims[1], (Range{0, 976}));
  EXPECT_EQ(head.back()->writes[0].dims[1], (Range{131 * 976, 128256}));  // smaller last tile
  EXPECT_EQ(tasks_of(m, "L0.attn_residual").size(), 8u);  // 2048 in tiles of 256
  EXPECT_EQ(tasks_of(m, "L0.silu_mul").size(), 32u);
  EXPECT_EQ(tasks_of(m, "L0.input_norm").size(), 1u);
  EXPECT_EQ(tasks_of(m, "L0.q_rope").size(), 1u);
  EXPECT_EQ(tasks_of(m, "L0.kv_append").size(), 8u);
  EXPECT_EQ(tasks_of(m, "argmax").size(), 127u);  // 126 partials of 1024 + reduce

  // Fewer SMs, bigger tiles.
  Module s = imported("llama-3.2-1b", 1, 0, 8);
  decompose(s, {{"coop", "off"}});
  EXPECT_EQ(tasks_of(s, "L0.q_proj").size(), 8u);
}

TEST(Decompose, AttentionSplitsIntoPartialsAndMerges) {
  Module m = imported("tiny-qwen3", 2);
  decompose(m, {{"attention-splits", "4"}, {"attention-rows", "2"}});
  const TensorId part = m.program.find_tensor("attn_part.1");
  ASSERT_GE(part, 0);
  const Tensor& pt = m.program.tensor(part);
  EXPECT_EQ(pt.role, TensorRole::kScratch);
  EXPECT_EQ(pt.dtype, DType::kF32);
  EXPECT_EQ(pt.shape, (std::vector<int64_t>{2, 4, 4, 66}));
  const auto tasks = tasks_of(m, "L1.attention");
  ASSERT_EQ(tasks.size(), 2u * 4 + 2);
  for (size_t i = 0; i < 8; ++i) EXPECT_EQ(tasks[i]->kind, TaskKind::kAttentionPartial);
  EXPECT_EQ(tasks[8]->kind, TaskKind::kAttentionMerge);
  EXPECT_EQ(tasks[9]->kind, TaskKind::kAttentionMerge);
  EXPECT_EQ(tasks[1]->reads[1].dims[1], (Range{0, 128}));  // the whole cache: the split follows the step

  // No splits: no scratch; tiny-qwen3's 4 query heads (2 per kv head, 64 wide) in pairs,
  // the auto rule's 128 values per task, or one per task when asked.
  Module u = imported("tiny-qwen3", 2);
  decompose(u, {{"attention-rows", "2"}});
  EXPECT_LT(u.program.find_tensor("attn_part.0"), 0);
  for (const Task* t : tasks_of(u, "L0.attention")) EXPECT_EQ(t->kind, TaskKind::kAttention);
  EXPECT_EQ(tasks_of(u, "L0.attention").size(), 2u);
  decompose(u, {{"attention-heads", "1"}, {"attention-rows", "2"}});
  EXPECT_EQ(tasks_of(u, "L0.attention").size(), 4u);
  EXPECT_THROW(decompose(u, {{"attention-heads", "3"}}), Error);  // does not divide 2
}

TEST(Decompose, AutoAttentionHeadsKeepAbout128QueryValuesPerTask) {
  // llama-3.2-1b: 32 query heads of 64 in groups of 4 -> pairs; qwen3-8b: heads of 128 -> one each.
  for (const auto& [preset, tasks] : {std::pair{"llama-3.2-1b", 16u}, {"qwen3-8b", 32u}}) {
    Module m = imported(preset);
    fuse(m, kAllFusions);
    decompose(m, {{"attention-splits", "1"}});
    size_t attention = 0;
    for (const Task* t : tasks_of(m, "L0.attention")) attention += t->kind == TaskKind::kAttention;
    EXPECT_EQ(attention, tasks) << preset;
  }
  // A machine with fewer SMs than such tasks: the whole group per task.
  Module small = imported("qwen3-8b");
  small.machine.sm_count = 16;
  decompose(small, {{"attention-splits", "1"}});
  EXPECT_EQ(tasks_of(small, "L0.attention").size(), 8u);
}

TEST(Decompose, AutoAttentionSplitsFollowSequenceLength) {
  auto splits = [](int64_t seq, int32_t sms) {
    Module m = imported("llama-3.2-1b", 1, seq, sms);
    decompose(m);
    const TensorId part = m.program.find_tensor("attn_part.0");
    return part < 0 ? int64_t{1} : m.program.tensor(part).shape[2];
  };
  EXPECT_EQ(splits(512, 132), 1);
  EXPECT_EQ(splits(1024, 132), 8);
  EXPECT_EQ(splits(4096, 132), 8);  // 132 SMs / (2 x 8 kv heads)
  EXPECT_EQ(splits(4096, 64), 4);
  EXPECT_EQ(splits(4096, 8), 1);
  EXPECT_EQ(splits(600, 132), 5);  // ceil(600 / 128)
}

TEST(Decompose, RerunReplacesGraphAndScratch) {
  Module m = imported("tiny");
  decompose(m, {{"attention-splits", "4"}});
  const size_t with_scratch = m.program.tensors.size();
  m.graph.events.push_back(Event{{0}, {1}, 1, 0});
  m.graph.schedule.policy = "round-robin";
  m.graph.schedule.workers = {{0}};
  decompose(m);
  EXPECT_TRUE(m.graph.events.empty());
  EXPECT_TRUE(m.graph.schedule.empty());
  EXPECT_LT(m.program.find_tensor("attn_part.0"), 0);
  EXPECT_EQ(m.program.tensors.size(), with_scratch - 2);  // two layers' attn_part gone
  check_decomposition(m, "rerun");
  const auto first = m.graph.tasks.size();
  decompose(m);
  EXPECT_EQ(m.graph.tasks.size(), first);
  EXPECT_EQ(m.program.tensors.size(), with_scratch - 2);
}

// Above batch 1 the attention spreads over the SMs by blocks of batch rows: the fewest
// rows per task that keep every row's tasks on the machine (docs/passes.md), each kind's
// tasks of all blocks together (the verifier's task order).
TEST(Decompose, AttentionTasksServeBlocksOfBatchRows) {
  const auto rows_of = [](const std::vector<const Task*>& tasks, TaskKind kind) {
    std::vector<Range> rows;
    for (const Task* t : tasks)
      if (t->kind == kind) rows.push_back(t->writes.at(0).dims.at(0));
    return rows;
  };
  // llama-3.2-1b at batch 8: 16 attention tasks per row (pairs of query heads), 8 blocks of 1 row.
  Module llama = imported("llama-3.2-1b", 8, 128);
  fuse(llama, kAllFusions);
  decompose(llama, {});
  const std::vector<Range> one = rows_of(tasks_of(llama, "L0.attention"), TaskKind::kAttention);
  ASSERT_EQ(one.size(), 128u);
  for (size_t i = 0; i < one.size(); ++i) EXPECT_EQ(one[i], (Range{int64_t(i / 16), int64_t(i / 16 + 1)})) << i;
  // Fewer SMs: blocks of more rows.
  Module few = imported("llama-3.2-1b", 8, 128, 40);
  fuse(few, kAllFusions);
  decompose(few, {});
  EXPECT_EQ(rows_of(tasks_of(few, "L0.attention"), TaskKind::kAttention).front(), (Range{0, 4}));
  // Split attention in blocks of 3 rows of 8: kv_appends, then partials, then merges.
  Module split = imported("tiny-qwen3", 8);
  fuse(split, kAllFusions);
  decompose(split, {{"attention-splits", "2"}, {"attention-rows", "3"}});
  const auto tasks = tasks_of(split, "L0.attention");
  ASSERT_EQ(tasks.size(), 3u * (2 + 2 * 2 + 2));
  for (size_t i = 0; i < tasks.size(); ++i)
    EXPECT_EQ(tasks[i]->kind, i < 6 ? TaskKind::kKvAppend : i < 18 ? TaskKind::kAttentionPartial : TaskKind::kAttentionMerge);
  EXPECT_EQ(rows_of(tasks, TaskKind::kAttentionMerge),
            (std::vector<Range>{{0, 3}, {0, 3}, {3, 6}, {3, 6}, {6, 8}, {6, 8}}));
  for (const Diagnostic& d : verify_structure(split)) ADD_FAILURE() << d.rule << ": " << d.message;
}

TEST(Decompose, DecomposedModulePassesStructureVerifier) {
  for (const char* preset : {"tiny", "tiny-qwen3", "llama-3.2-1b"}) {
    Module m = imported(preset, 2);
    decompose(m, {{"attention-splits", "3"}});
    for (const Diagnostic& d : verify_structure(m)) ADD_FAILURE() << preset << ": " << d.rule << ": " << d.message;
  }
}

TEST(Decompose, FusedAttentionAppendsInItsTasks) {
  // One split, a kv head's whole group per task: the task also writes its cache rows.
  Module one = imported("tiny-qwen3", 2);
  fuse(one, kAllFusions);
  decompose(one, {{"attention-splits", "1"}, {"attention-heads", "2"}, {"attention-rows", "2"}});
  const auto tasks = tasks_of(one, "L0.attention");
  ASSERT_EQ(tasks.size(), 2u);
  const Program& p = one.program;
  for (const Task* t : tasks) {
    EXPECT_EQ(t->kind, TaskKind::kAttention);
    ASSERT_EQ(t->reads.size(), 7u);  // q, k, v, q_norm_w, k_norm_w, k_cache, v_cache
    EXPECT_EQ(t->reads[3].tensor, p.find_tensor("model.layers.0.self_attn.q_norm.weight"));
    ASSERT_EQ(t->writes.size(), 3u);  // y, k_cache, v_cache
    EXPECT_EQ(t->writes[1], t->reads[5]);
    EXPECT_EQ(t->writes[2], t->reads[6]);
  }
  // One split, one query head per task: the 4 tasks write only their heads' output, and
  // one kv_append task per kv head, after them, writes the cache rows.
  Module heads = imported("tiny-qwen3", 2);
  fuse(heads, kAllFusions);
  decompose(heads, {{"attention-splits", "1"}, {"attention-heads", "1"}, {"attention-rows", "2"}});
  const auto per_head = tasks_of(heads, "L0.attention");
  ASSERT_EQ(per_head.size(), 4u + 2);
  for (size_t i = 0; i < per_head.size(); ++i) {
    EXPECT_EQ(per_head[i]->kind, i < 4 ? TaskKind::kAttention : TaskKind::kKvAppend) << i;
    if (i >= 4) continue;
    EXPECT_EQ(per_head[i]->reads.size(), 7u) << i;  // q head, k, v, q_norm_w, k_norm_w, k_cache, v_cache
    ASSERT_EQ(per_head[i]->writes.size(), 1u) << i;  // its head of y
    const int64_t j = static_cast<int64_t>(i);  // query head j (head_dim 64) of kv head j / 2
    EXPECT_EQ(per_head[i]->writes[0].dims[1], (Range{j * 64, (j + 1) * 64}));
    EXPECT_EQ(per_head[i]->reads[5].dims[2], (Range{j / 2, j / 2 + 1}));
  }
  EXPECT_EQ(per_head[4]->writes[0].dims[2], (Range{0, 1}));
  EXPECT_EQ(per_head[5]->writes[0].dims[2], (Range{1, 2}));
  // Four splits: per kv head one kv_append task, then the partials, then the merges.
  Module four = imported("tiny-qwen3", 2);
  fuse(four, kAllFusions);
  decompose(four, {{"attention-splits", "4"}, {"attention-rows", "2"}});
  const auto split = tasks_of(four, "L1.attention");
  ASSERT_EQ(split.size(), 2u + 2 * 4 + 2);
  for (size_t i = 0; i < split.size(); ++i) {
    const TaskKind want =
        i < 2 ? TaskKind::kKvAppend : i < 10 ? TaskKind::kAttentionPartial : TaskKind::kAttentionMerge;
    EXPECT_EQ(split[i]->kind, want) << i;
  }
  EXPECT_EQ(split[0]->reads.size(), 3u);  // k, v, k_norm_w
  EXPECT_EQ(split[2]->reads.size(), 4u);  // q, q_norm_w, k_cache, v_cache
  EXPECT_EQ(split[3]->reads[2].dims[1], (Range{0, 128}));  // the whole cache: the split follows the step
  EXPECT_GT(split[0]->flops, 0);  // it norms and ropes k
}

TEST(Decompose, SwigluTilesAndLmHeadArgmaxPartials) {
  Module m = imported("llama-3.2-1b");
  fuse(m, kAllFusions);
  decompose(m, {{"coop", "off"}});
  const auto swiglu = tasks_of(m, "L0.gate_proj_swiglu");
  ASSERT_EQ(swiglu.size(), 128u);  // I = 8192 in tiles of 64, as gate_proj's
  const Program& p = m.program;
  const TensorId wg = p.find_tensor("model.layers.0.mlp.gate_proj.weight");
  const TensorId wu = p.find_tensor("model.layers.0.mlp.up_proj.weight");
  EXPECT_EQ(swiglu[5]->reads[1], reg(wg, {{320, 384}, {0, 2048}}));
  EXPECT_EQ(swiglu[5]->reads[2], reg(wu, {{320, 384}, {0, 2048}}));
  EXPECT_EQ(swiglu[5]->writes[0], reg(p.find_tensor("act.0"), {{0, 1}, {320, 384}}));
  EXPECT_EQ(swiglu[5]->flops, 2 * 2 * 64 * 2048 + 4 * 64);
  // 132 lm_head tasks, each with its argmax partial slot, and one reduce.
  const auto head = tasks_of(m, "lm_head");
  ASSERT_EQ(head.size(), 133u);
  EXPECT_EQ(p.tensor(p.find_tensor("argmax_val")).shape, (std::vector<int64_t>{1, 132}));
  EXPECT_EQ(head[7]->writes[1], reg(p.find_tensor("argmax_val"), {{0, 1}, {7, 8}}));
  EXPECT_EQ(head[7]->writes[2], reg(p.find_tensor("argmax_idx"), {{0, 1}, {7, 8}}));
  EXPECT_EQ(head.back()->kind, TaskKind::kArgmaxReduce);
  EXPECT_EQ(head.back()->writes[0], reg(p.find_tensor("tokens"), {{0, 1}}));
  EXPECT_LT(p.find_op("argmax"), 0);
  EXPECT_LT(p.find_op("final_norm"), 0);
}

TEST(Decompose, RejectsBadOptionsByName) {
  const PassInfo& info = *find_pass("decompose");
  for (const char* key : {"tile", "lm-head-tile", "elementwise-tile", "attention-splits", "argmax-tile"})
    for (const char* value : {"0", "-3", "abc", "1.5", ""}) {
      try {
        info.create({{key, value}});
        ADD_FAILURE() << key << "=" << value << " accepted";
      } catch (const Error& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find("decompose"), std::string::npos) << msg;
        EXPECT_NE(msg.find(std::string("'") + key + "'"), std::string::npos) << msg;
      }
    }
  EXPECT_NO_THROW(info.create({{"tile", "auto"}, {"attention-splits", "2"}}));
  // More splits than positions fails when run, naming the option.
  Module m = imported("tiny");
  PassResult r = info.create({{"attention-splits", "129"}})->run(m);
  ASSERT_TRUE(r.error);
  EXPECT_NE(r.error->find("attention-splits"), std::string::npos) << *r.error;
}

TEST(Decompose, RegistryListsEveryOption) {
  const PassInfo* info = find_pass("decompose");
  ASSERT_NE(info, nullptr);
  std::vector<std::string> keys;
  for (const PassOptionInfo& o : info->options) {
    keys.push_back(o.name);
    EXPECT_FALSE(o.help.empty()) << o.name;
  }
  EXPECT_EQ(keys, (std::vector<std::string>{"tile", "lm-head-tile", "elementwise-tile", "attention-splits",
                                            "attention-heads", "attention-rows", "argmax-tile", "coop", "coop-unit"}));
}

// Cooperative linears (docs/ir.md): with the default fusions on llama-3.2-1b, auto makes
// the SwiGLU linears and the LM head cooperative (at least 2 units per SM), never the
// q/k/v projections (they share x), nor o_proj and down_proj (2048 rows: 256 units of 8).
TEST(Decompose, CooperativeLinears) {
  Module m = imported("llama-3.2-1b");
  fuse(m, kAllFusions);
  decompose(m);
  const int64_t sms = m.machine.sm_count;
  auto expect_shares = [&](const std::string& op, int64_t unit, int64_t rows) {
    std::vector<const Task*> shares;
    for (const Task* t : tasks_of(m, op))
      if (t->kind != TaskKind::kArgmaxReduce) shares.push_back(t);
    ASSERT_EQ(shares.size(), static_cast<size_t>(sms)) << op;
    int64_t bytes = 0;
    for (size_t i = 0; i < shares.size(); ++i) {
      const CoopShare c = coop_share(*shares[i]);
      EXPECT_EQ(c.share, static_cast<int64_t>(i)) << op;
      EXPECT_EQ(c.shares, sms) << op;
      EXPECT_EQ(c.unit_rows, unit) << op;
      EXPECT_EQ(shares[i]->writes[0].dims[1], (Range{0, rows})) << op << ": every share declares the whole output";
      bytes += shares[i]->bytes;
    }
    const int64_t k = m.program.tensor(linear_form(m.program.ops[shares[0]->op]).x).shape[1];
    EXPECT_GE(bytes, rows * k * 2) << op << ": the shares' bytes add up to at least the weight's";
  };
  expect_shares("L0.gate_proj_swiglu", 8, 8192);  // 64 KiB / (2 weights x 2048 x 2 bytes)
  expect_shares("lm_head", 16, 128256);            // 64 KiB / (2048 x 2 bytes)
  for (const char* op : {"L0.q_proj", "L0.o_proj", "L0.down_proj"})
    for (const Task* t : tasks_of(m, op)) EXPECT_FALSE(coop_share(*t).cooperative()) << op;
  // The LM head's argmax partials: one slot per share.
  const Tensor& val = m.program.tensor(m.program.find_tensor("argmax_val"));
  EXPECT_EQ(val.shape[1], sms);
  // on makes o_proj cooperative too; off none; coop-unit sets the unit.
  Module on = imported("llama-3.2-1b");
  fuse(on, kAllFusions);
  decompose(on, {{"coop", "on"}, {"coop-unit", "32"}});
  EXPECT_EQ(coop_share(*tasks_of(on, "L0.o_proj").front()).unit_rows, 32);
  Module off = imported("llama-3.2-1b");
  fuse(off, kAllFusions);
  decompose(off, {{"coop", "off"}});
  for (const Task& t : off.graph.tasks) EXPECT_FALSE(coop_share(t).cooperative());
  EXPECT_THROW(decompose(off, {{"coop-unit", "12"}}), Error);
}

}  // namespace
}  // namespace mpk
