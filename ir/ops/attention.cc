// The attention family in the ir layer: attention over the KV caches, plain or fused by
// fuse-attention (ir/ops/attention.h); one task per group of query heads of a kv head
// with one split, or attention_partial tasks per (kv head, split) and one
// attention_merge per kv head; a fused attention also owns kv_append tasks.
#include "ir/ops/attention.h"

#include "ir/checked.h"
#include "ir/ops/op_check.h"

namespace mpk {

AttentionForm attention_form(const Operator& op) {
  AttentionForm f;
  if (op.kind != OpKind::kAttention || op.inputs.size() < 3) return f;
  const auto& in = op.inputs;
  if (in.size() >= 5) {
    f.q = in[0], f.k = in[1], f.v = in[2], f.k_cache = in[3], f.v_cache = in[4];
    if (in.size() >= 7) f.q_norm = in[5], f.k_norm = in[6];
  } else {
    f.q = in[0], f.k_cache = in[1], f.v_cache = in[2];
  }
  if (!op.outputs.empty()) f.y = op.outputs[0];
  return f;
}

namespace ops {
namespace {

// The caches are its only in-place operands (outputs 1 and 2 are inputs 3 and 4); k and
// v are its kv head's raw heads; the rope attrs share head_dim; norms in pairs.
void fused_attention_signature(OpSignature& s, const AttentionForm& f, int64_t b, int64_t kv_width, int64_t hd) {
  const Operator& op = s.op();
  if (op.outputs[1] != f.k_cache || op.outputs[2] != f.v_cache)
    s.bad("outputs 1 and 2 must be the caches it reads (inputs 3 and 4)");
  for (TensorId t : {f.q, f.k, f.v, f.q_norm, f.k_norm, op.outputs[0]})
    if (t == f.k_cache || t == f.v_cache)
      s.bad("only the caches may be both read and written; '" + s.tensor(t).name + "' is a cache");
  for (TensorId t : {f.q, f.k, f.v})
    if (t == op.outputs[0]) s.bad("y '" + s.tensor(t).name + "' is also an input");
  const Tensor& kt = s.tensor(f.k);
  const auto& k = s.rank(kt, "k", 2);
  s.floating(kt, "k");
  s.floating(s.tensor(f.v), "v");
  s.same_shape(s.tensor(f.v), "v", kt, "k");
  s.dim(k[0], b, "k dimension 0 (batch)");
  s.dim(k[1], kv_width, "k width (num_kv_heads x head_dim)");
  s.dim(s.rope_attrs(), hd, "rope head_dim");
  if (f.q_norm < 0) return;
  s.positive_float("eps");
  for (auto [t, role] : {std::pair{f.q_norm, "q_norm_w"}, {f.k_norm, "k_norm_w"}}) {
    const auto& w = s.rank(s.tensor(t), role, 1);
    s.floating(s.tensor(t), role);
    s.dim(w[0], hd, std::string(role) + " length (head_dim)");
  }
}

}  // namespace

// Plain, or fused by fuse-attention: then it also reads k and v (and the norm
// weights), and writes the caches it reads.
void attention_signature(OpSignature& s) {
  const Operator& op = s.op();
  const AttentionForm f = attention_form(op);
  if (op.inputs.size() >= 5)
    s.arity(op.inputs.size() >= 7 ? 7 : 5, 3);
  else
    s.arity(3, 1);
  const Tensor& qt = s.tensor(f.q);
  const auto& q = s.rank(qt, "q", 2);
  s.floating(qt, "q");
  s.caches(s.tensor(f.k_cache), s.tensor(f.v_cache), q[0]);
  s.floating(s.out(0), "y");
  s.same_shape(s.out(0), "y", qt, "q");
  const int64_t nq = s.positive_int("num_q_heads");
  const int64_t nkv = s.positive_int("num_kv_heads");
  const int64_t hd = s.positive_int("head_dim");
  s.positive_float("scale");
  if (nq % nkv != 0)
    s.bad("num_q_heads " + std::to_string(nq) + " is not a multiple of num_kv_heads " + std::to_string(nkv));
  s.dim(q[1], checked_mul(nq, hd, "num_q_heads x head_dim"), "q width (num_q_heads x head_dim)");
  const auto& c = s.tensor(f.k_cache).shape;
  s.dim(c[2], nkv, "cache dimension 2 (num_kv_heads)");
  s.dim(c[3], hd, "cache dimension 3 (head_dim)");
  if (!f.fused()) return;
  fused_attention_signature(s, f, q[0], c[2] * c[3], hd);
  s.allow_in_place();
}

// A fused attention also appends (kv_append tasks).
bool attention_owns_task(const Operator& op, TaskKind k) {
  return k == TaskKind::kAttention || k == TaskKind::kAttentionPartial || k == TaskKind::kAttentionMerge ||
         (k == TaskKind::kKvAppend && attention_form(op).fused());
}

// kv head h (of G query heads) over the batch rows of what the task writes: attention
// (one split: whole query heads of h; a fused task that writes the caches appends h
// itself), attention_partial (split i, of all of [0, S): its positions follow the step)
// or attention_merge.
TaskRegions attention_task_regions(const TaskRegionRules& r, const Task& task) {
  const Operator& op = r.op_of(task);
  const AttentionForm af = attention_form(op);
  const int64_t hd = attr_int(op.attrs, "head_dim");
  const int64_t g = attr_int(op.attrs, "num_q_heads") / attr_int(op.attrs, "num_kv_heads");
  const int64_t seq = r.shape(af.k_cache)[1];
  const std::vector<Tensor>& tensors = r.program().tensors;
  Range rows;  // the batch rows, those of the region the task is keyed on
  auto cache = [&](TensorId t, int64_t h, int64_t s0, int64_t s1) {
    return r.reg(t, {sequences_of(rows, r.shape(af.q)[0], r.shape(t)[0]), {s0, s1}, {h, h + 1}, {0, hd}});
  };
  auto q_cols = [&](int64_t h) { return Range{h * g * hd, (h + 1) * g * hd}; };
  TaskRegions f;
  if (task.kind == TaskKind::kAttentionPartial) {
    const TensorId part = r.need(r.scratch().part, "attention partial");
    const Region& w = r.key(task, part, "attention partial");
    rows = w.dims[0];
    const int64_t h = r.head_of(w.dims[1], g, format_region(tensors[part].name, w));
    const int64_t i = w.dims[2].lo;
    f.reads = {r.reg(af.q, {rows, q_cols(h)})};
    if (af.fused() && af.q_norm >= 0) f.reads.push_back(r.reg(af.q_norm, {{0, hd}}));
    f.reads.push_back(cache(af.k_cache, h, 0, seq));
    f.reads.push_back(cache(af.v_cache, h, 0, seq));
    f.writes = {r.reg(part, {rows, {h * g, (h + 1) * g}, {i, i + 1}, {0, hd + 2}})};
    return f;
  }
  const Region& w = r.key(task, af.y, "output");
  rows = w.dims[0];
  if (task.kind == TaskKind::kAttentionMerge) {
    const int64_t h = r.head_of(w.dims[1], g * hd, format_region(tensors[af.y].name, w));
    const TensorId part = r.need(r.scratch().part, "attention partial");
    f.writes = {r.reg(af.y, {rows, q_cols(h)})};
    f.reads = {r.reg(part, {rows, {h * g, (h + 1) * g}, r.all(part, 2), {0, hd + 2}})};
    return f;
  }
  const Range c = w.dims[1];
  if (c.lo % hd != 0 || c.hi % hd != 0 || c.empty() || c.lo / (g * hd) != (c.hi - 1) / (g * hd))
    r.bad("writes " + format_region(tensors[af.y].name, w) + ": not whole query heads of one kv head");
  const int64_t h = c.lo / (g * hd);
  f.writes = {r.reg(af.y, {rows, c})};
  f.reads = {r.reg(af.q, {rows, c})};
  if (af.fused()) {
    const Range k_cols{h * hd, (h + 1) * hd};
    f.reads.push_back(r.reg(af.k, {rows, k_cols}));
    f.reads.push_back(r.reg(af.v, {rows, k_cols}));
    if (af.q_norm >= 0) f.reads.insert(f.reads.end(), {r.reg(af.q_norm, {{0, hd}}), r.reg(af.k_norm, {{0, hd}})});
    if (r.writes_on(task, af.k_cache)) {
      f.writes.push_back(cache(af.k_cache, h, 0, seq));
      f.writes.push_back(cache(af.v_cache, h, 0, seq));
    }
  }
  f.reads.push_back(cache(af.k_cache, h, 0, seq));
  f.reads.push_back(cache(af.v_cache, h, 0, seq));
  return f;
}

}  // namespace ops
}  // namespace mpk
