// CPU, attention family: attention over positions 0..pos, plain or fused (a fused
// attention norms and ropes its q heads and appends k and v first), as one-split
// attention tasks over whole query heads of a kv head, or attention_partial tasks per
// (kv heads, split) and attention_merge tasks (numerics.h attention_block,
// attention_partial_block, attention_merge_block).
#include "ir/rope.h"
#include "runtime/cpu/ops/cpu_ops.h"

namespace mpk::cpu {
namespace {

AttentionShape attention_shape(const Operator& op) {
  const int64_t nq = attr_int(op.attrs, "num_q_heads"), nkv = attr_int(op.attrs, "num_kv_heads");
  return {nq / nkv, attr_int(op.attrs, "head_dim"), static_cast<float>(attr_float(op.attrs, "scale"))};
}

// How a fused attention prepares its q heads (norm weight `norm`) and its k heads.
HeadSetup fused_setup(const Operator& op, TensorId norm) {
  const AttentionForm f = attention_form(op);
  HeadSetup s;
  s.rope_inv = rope_inverse_frequencies(op.attrs);
  s.norm = norm;
  if (f.q_norm >= 0) s.eps = attr_float(op.attrs, "eps");
  return s;
}

// One split: query heads [j0, j1) of rows b0:b1; a fused task appends its kv heads first
// (whole groups), or prepares position pos's k and v itself (the operator's kv_append
// tasks store them after it).
TaskRun plan_one_split(const TaskResolver& r, const AttentionShape& a, int64_t seq) {
  const Operator& op = r.op();
  const AttentionForm f = attention_form(op);
  const int64_t g = a.group, hd = a.head_dim;
  const Region& w = r.write_on(f.y);
  r.require(w.dims[1].lo % hd == 0 && w.dims[1].hi % hd == 0 && !w.dims[1].empty(), "must write whole query heads");
  const int64_t b0 = w.dims[0].lo, b1 = w.dims[0].hi, j0 = w.dims[1].lo / hd, j1 = w.dims[1].hi / hd;
  const Range kv_heads{j0 / g, (j1 - 1) / g + 1};
  r.need(box(f.q, {{b0, b1}, {j0 * hd, j1 * hd}}));
  const Range seqs = sequences_of({b0, b1}, r.tensor(f.q).shape[0], r.tensor(f.k_cache).shape[0]);
  for (TensorId cache : {f.k_cache, f.v_cache}) r.need(box(cache, {seqs, {0, seq}, kv_heads, {0, hd}}));
  const bool fused = f.fused();
  const HeadSetup q_setup = fused ? fused_setup(op, f.q_norm) : HeadSetup{};
  const HeadSetup k_setup = fused ? fused_setup(op, f.k_norm) : HeadSetup{};
  if (fused && f.q_norm >= 0) r.need(box(f.q_norm, {{0, hd}}));
  const bool appends = fused && r.writes(f.k_cache);
  if (appends) {
    const std::pair<Range, Range> rh = appended(r, f.k, f.v, f.k_cache, f.v_cache, f.k_norm);
    r.require(rh.first == Range{b0, b1} && rh.second == kv_heads && j0 % g == 0 && j1 % g == 0,
              "must append the rows and kv heads it attends with, for all of their query heads");
  } else if (fused) {
    const Range cols{kv_heads.lo * hd, kv_heads.hi * hd};
    r.need(box(f.k, {{b0, b1}, cols}));
    r.need(box(f.v, {{b0, b1}, cols}));
    if (f.k_norm >= 0) r.need(box(f.k_norm, {{0, hd}}));
  }
  return [=](TensorStore& st, const StepContext& ctx) {
    const HeadPrep q_prep = q_setup.prep(st);
    CurrentKv current;
    if (fused) current = {&st.at(f.k), &st.at(f.v), k_setup.prep(st)};
    if (appends)
      kv_append_block(*current.k, *current.v, st.at(f.k_cache), st.at(f.v_cache), b0, b1, j0 / g, j1 / g, ctx.rows(),
                      current.prep);
    attention_block(st.at(f.q), st.at(f.k_cache), st.at(f.v_cache), st.at(f.y), b0, b1, j0, j1, a, ctx.rows(),
                    fused ? &q_prep : nullptr, fused && !appends ? &current : nullptr);
  };
}

// Split `slot` of kv heads h0:h1 over the cache positions it reads.
TaskRun plan_partial(const TaskResolver& r, const AttentionShape& a, int64_t nq) {
  const Operator& op = r.op();
  const AttentionForm f = attention_form(op);
  const int64_t g = a.group, hd = a.head_dim;
  const TensorId part = r.scratch(true, DType::kF32);
  const auto& ps = r.tensor(part).shape;
  r.require(ps.size() == 4 && ps[0] == r.tensor(f.q).shape[0] && ps[1] == nq && ps[3] == hd + 2,
            "partial tensor '" + r.tensor(part).name + "' must be [B, nq, splits, hd+2]");
  const Region& w = r.write_on(part);
  r.require(w.dims[2].size() == 1 && w.dims[3] == Range{0, hd + 2}, "must write one split slot of whole partial records");
  r.require(w.dims[1].lo % g == 0 && w.dims[1].hi % g == 0, "must write whole kv-head groups of query heads");
  const int64_t b0 = w.dims[0].lo, b1 = w.dims[0].hi, j0 = w.dims[1].lo, j1 = w.dims[1].hi, slot = w.dims[2].lo;
  const Range positions = r.read_on(f.k_cache).dims[1];
  const int64_t splits = ps[2], seq = r.tensor(f.k_cache).shape[1];
  const Range kv_heads{j0 / g, (j1 - 1) / g + 1};
  r.need(box(f.q, {{b0, b1}, {j0 * hd, j1 * hd}}));
  const Range seqs = sequences_of({b0, b1}, r.tensor(f.q).shape[0], r.tensor(f.k_cache).shape[0]);
  for (TensorId cache : {f.k_cache, f.v_cache}) r.need(box(cache, {seqs, positions, kv_heads, {0, hd}}));
  const bool fused = f.fused();
  const HeadSetup q_setup = fused ? fused_setup(op, f.q_norm) : HeadSetup{};
  if (fused && f.q_norm >= 0) r.need(box(f.q_norm, {{0, hd}}));
  return [=](TensorStore& st, const StepContext& ctx) {
    const HeadPrep q_prep = q_setup.prep(st);
    // The split follows the step (its region is the whole cache).
    const auto [s0, s1] = ctx.rows().attention_split(slot, splits, seq);
    attention_partial_block(st.at(f.q), st.at(f.k_cache), st.at(f.v_cache), st.at(part), b0, b1, kv_heads.lo,
                            kv_heads.hi, a, ctx.rows(), s0, s1, slot, fused ? &q_prep : nullptr);
  };
}

// Query heads of whole kv-head groups from all splits of the partials.
TaskRun plan_merge(const TaskResolver& r) {
  const Operator& op = r.op();
  const int64_t hd = attr_int(op.attrs, "head_dim");
  const TensorId y = op.outputs[0], part = r.scratch(false, DType::kF32);
  const auto& ps = r.tensor(part).shape;
  r.require(ps.size() == 4 && ps[0] == r.tensor(y).shape[0] && ps[1] * hd == r.tensor(y).shape[1] && ps[3] == hd + 2,
            "partial tensor '" + r.tensor(part).name + "' must be [B, nq, splits, hd+2]");
  const Region& w = r.write_on(y);
  r.require(w.dims[1].lo % hd == 0 && w.dims[1].hi % hd == 0, "must write whole query heads");
  const int64_t b0 = w.dims[0].lo, b1 = w.dims[0].hi, j0 = w.dims[1].lo / hd, j1 = w.dims[1].hi / hd;
  r.need(box(part, {{b0, b1}, {j0, j1}, {0, ps[2]}, {0, hd + 2}}));
  return [=](TensorStore& st, const StepContext&) { attention_merge_block(st.at(part), st.at(y), b0, b1, j0, j1, hd); };
}

}  // namespace

void run_attention_op(const Program&, const Operator& op, TensorStore& st, const StepContext& ctx) {
  const AttentionForm f = attention_form(op);
  const AttentionShape a = attention_shape(op);
  TensorBuffer& kc = st.at(f.k_cache);
  TensorBuffer& vc = st.at(f.v_cache);
  TensorBuffer& y = st.at(f.y);
  const int64_t rows = y.shape[0];
  if (!f.fused()) {
    attention_block(st.at(f.q), kc, vc, y, 0, rows, 0, a.group * kc.shape[2], a, ctx.rows());
    return;
  }
  // fuse-attention: k (normed, roped) and v appended, then attention with q normed and roped.
  const HeadSetup q_setup = fused_setup(op, f.q_norm), k_setup = fused_setup(op, f.k_norm);
  const HeadPrep q_prep = q_setup.prep(st), k_prep = k_setup.prep(st);
  kv_append_block(st.at(f.k), st.at(f.v), kc, vc, 0, rows, 0, kc.shape[2], ctx.rows(), k_prep);
  attention_block(st.at(f.q), kc, vc, y, 0, rows, 0, a.group * kc.shape[2], a, ctx.rows(), &q_prep);
}

TaskRun plan_attention_task(const TaskResolver& r) {
  r.kind_of_op({OpKind::kAttention});
  const Operator& op = r.op();
  const AttentionShape a = attention_shape(op);
  switch (r.task().kind) {
    case TaskKind::kAttention:
      return plan_one_split(r, a, r.tensor(attention_form(op).k_cache).shape[1]);
    case TaskKind::kAttentionPartial:
      return plan_partial(r, a, attr_int(op.attrs, "num_q_heads"));
    default:
      return plan_merge(r);
  }
}

}  // namespace mpk::cpu
