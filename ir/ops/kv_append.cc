// The kv_append family in the ir layer: kv_append(k, v) -> (k_cache, v_cache) at the
// step's position, roping k first when fuse-rope gave it the rope's attrs; one task per
// kv head, also for a fused attention's appends.
#include "ir/checked.h"
#include "ir/ops/op_check.h"

namespace mpk::ops {

void kv_append_signature(OpSignature& s) {
  s.arity(2, 2);
  const auto& k = s.rank(s.in(0), "k", 2);
  s.rank(s.in(1), "v", 2);
  s.floating(s.in(0), "k");
  s.floating(s.in(1), "v");
  s.same_shape(s.in(0), "k", s.in(1), "v");
  s.caches(s.out(0), s.out(1), k[0]);
  const auto& c = s.out(0).shape;
  s.dim(checked_mul(c[2], c[3], "cache heads x head_dim"), k[1], "cache heads x head_dim");
  if (s.op().attrs.count("theta")) s.dim(s.rope_attrs(), c[3], "head_dim");  // ropes k (fuse-rope)
}

bool kv_append_owns_task(const Operator&, TaskKind k) { return k == TaskKind::kKvAppend; }

// One kv head h over the sequences of the cache region it writes (all their rows): k and v columns (and
// the k norm weight of a fused, normed attention) -> that head of both caches, all
// positions.
TaskRegions kv_append_task_regions(const TaskRegionRules& r, const Task& task) {
  const Operator& op = r.op_of(task);
  const AttentionForm af = attention_form(op);
  const bool fused = op.kind == OpKind::kAttention;
  const TensorId k = fused ? af.k : op.inputs[0], v = fused ? af.v : op.inputs[1];
  const TensorId kc = fused ? af.k_cache : op.outputs[0], vc = fused ? af.v_cache : op.outputs[1];
  const Region& key = r.key(task, kc, "cache");
  const int64_t hd = r.shape(kc)[3], h = key.dims[2].lo;
  const Range seqs = key.dims[0];
  const int64_t chunk = r.shape(k)[0] / r.shape(kc)[0];  // the rows of a sequence
  const Range rows{seqs.lo * chunk, seqs.hi * chunk}, cols{h * hd, (h + 1) * hd};
  TaskRegions f;
  f.reads = {r.reg(k, {rows, cols}), r.reg(v, {rows, cols})};
  if (fused && af.k_norm >= 0) f.reads.push_back(r.reg(af.k_norm, {{0, hd}}));
  f.writes = {r.reg(kc, {seqs, r.all(kc, 1), {h, h + 1}, {0, hd}}),
              r.reg(vc, {seqs, r.all(vc, 1), {h, h + 1}, {0, hd}})};
  return f;
}

}  // namespace mpk::ops
