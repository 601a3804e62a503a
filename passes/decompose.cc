// The `decompose` pass: turns every operator of the Program into tasks with the read
// and write regions of docs/ir.md ("Tasks (made by decompose)"), with bytes and flops
// estimates, in program order. Tile sizes default to values computed from the machine
// model so that large operators spread over all SMs; options override them.
#include <algorithm>
#include <optional>
#include <string>

#include "ir/error.h"
#include "passes/options.h"

namespace mpk {
namespace {

constexpr const char* kPass = "decompose";

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t round_up(int64_t a, int64_t m) { return ceil_div(a, m) * m; }

// Tile sizes; unset means "auto" (computed per operator from the machine model).
// Cooperative linears (docs/ir.md): off, auto (large enough operators), on (every one
// eligible).
enum class Coop { kOff, kAuto, kOn };

struct DecomposeOptions {
  std::optional<int64_t> tile;
  std::optional<int64_t> lm_head_tile;
  std::optional<int64_t> elementwise_tile;
  std::optional<int64_t> attention_splits;
  std::optional<int64_t> attention_heads;
  std::optional<int64_t> argmax_tile;
  Coop coop = Coop::kAuto;
  std::optional<int64_t> coop_unit;
};

// Auto tile rules (docs/passes.md): about one tile per SM, rounded to a friendly size.
int64_t auto_linear_tile(int64_t n, int64_t sms) { return std::max<int64_t>(8, round_up(ceil_div(n, sms), 8)); }
int64_t auto_elementwise_tile(int64_t cols, int64_t sms) {
  return std::max<int64_t>(256, round_up(ceil_div(cols, sms), 64));
}
int64_t auto_argmax_tile(int64_t v, int64_t sms) { return std::max<int64_t>(64, round_up(ceil_div(v, sms), 64)); }
int64_t auto_attention_splits(int64_t seq, int64_t kv_heads, int64_t sms) {
  if (seq <= 512) return 1;
  return std::min(ceil_div(seq, 256), std::max<int64_t>(1, sms / kv_heads));
}
// Query heads per attention task (one split): the most, dividing the group, whose
// outputs (heads x head_dim) stay within 128 values, so that a kv head's query heads
// attend on several SMs (on the H100, llama-3.2-1b's 64-wide heads in pairs and
// qwen3-8b's 128-wide ones alone measured fastest); the whole group where that would
// need more tasks than the machine has SMs.
int64_t auto_attention_heads(int64_t q_heads, int64_t group, int64_t head_dim, int64_t sms) {
  int64_t heads = 1;
  for (int64_t h = 2; h <= group; ++h)
    if (group % h == 0 && h * head_dim <= 128) heads = h;
  return q_heads / heads <= sms ? heads : group;
}

bool is_decompose_scratch(const Tensor& t) {
  return t.role == TensorRole::kScratch &&
         (t.name.rfind("attn_part.", 0) == 0 || t.name == "argmax_val" || t.name == "argmax_idx");
}

// Removes scratch tensors made by an earlier decompose, renumbering operator operands.
void drop_old_scratch(Program& p) {
  std::vector<TensorId> remap(p.tensors.size(), -1);
  std::vector<Tensor> kept;
  for (size_t i = 0; i < p.tensors.size(); ++i) {
    if (is_decompose_scratch(p.tensors[i])) continue;
    remap[i] = static_cast<TensorId>(kept.size());
    kept.push_back(std::move(p.tensors[i]));
  }
  if (kept.size() == p.tensors.size()) {
    p.tensors = std::move(kept);
    return;
  }
  for (Operator& op : p.ops)
    for (auto* list : {&op.inputs, &op.outputs})
      for (TensorId& t : *list) {
        if (t < 0 || t >= static_cast<TensorId>(remap.size()) || remap[t] < 0)
          throw Error("operator '" + op.name + "' uses a scratch tensor");
        t = remap[t];
      }
  p.tensors = std::move(kept);
}

class Decomposer {
 public:
  Decomposer(Module& m, const DecomposeOptions& o)
      : m_(m), p_(m.program), o_(o), sms_(std::max<int64_t>(1, m.machine.sm_count)) {}

  void run() {
    m_.graph = TaskGraph{};
    drop_old_scratch(p_);
    p_.rebuild_use_lists();
    const size_t num_ops = p_.ops.size();
    for (size_t i = 0; i < num_ops; ++i) {
      op_ = static_cast<OpId>(i);
      emit_op(p_.ops[i]);
    }
    p_.rebuild_use_lists();
  }

 private:
  // ---- operand access with shape checks (never index out of bounds) ----
  [[noreturn]] void bad(const Operator& op, const std::string& what) const {
    throw Error("operator '" + op.name + "' (" + std::string(name_of(op.kind)) +
                "): " + what);
  }
  void arity(const Operator& op, size_t in, size_t out) const {
    if (op.inputs.size() != in || op.outputs.size() != out)
      bad(op, "expects " + std::to_string(in) + " inputs and " + std::to_string(out) +
                  " outputs");
    for (auto* list : {&op.inputs, &op.outputs})
      for (TensorId t : *list)
        if (t < 0 || t >= static_cast<TensorId>(p_.tensors.size()))
          bad(op, "refers to unknown tensor id " + std::to_string(t));
  }
  const std::vector<int64_t>& shape(const Operator& op, TensorId t, size_t rank) const {
    const Tensor& tt = p_.tensor(t);
    if (tt.shape.size() != rank)
      bad(op, "tensor '" + tt.name + "' must have rank " + std::to_string(rank));
    for (int64_t s : tt.shape)
      if (s <= 0) bad(op, "tensor '" + tt.name + "' has a non-positive dimension");
    return tt.shape;
  }
  int64_t esize(TensorId t) const { return size_of(p_.tensor(t).dtype); }

  // ---- task construction ----
  static Region reg(TensorId t, std::vector<Range> dims) { return Region{t, std::move(dims)}; }
  int64_t region_bytes(const Region& r) const { return r.volume() * esize(r.tensor); }
  int64_t regions_bytes(const std::vector<Region>& rs) const {
    int64_t n = 0;
    for (const Region& r : rs) n += region_bytes(r);
    return n;
  }

  // bytes: reads + writes of the regions unless given.
  void task(TaskKind kind, std::vector<Region> reads, std::vector<Region> writes, int64_t flops,
            int64_t bytes = -1, Attrs attrs = {}) {
    Task t;
    t.op = op_;
    t.kind = kind;
    t.attrs = std::move(attrs);
    if (bytes < 0) bytes = regions_bytes(reads) + regions_bytes(writes);
    t.reads = std::move(reads);
    t.writes = std::move(writes);
    t.bytes = bytes;
    t.flops = flops;
    m_.graph.tasks.push_back(std::move(t));
  }

  TensorId add_scratch(const Operator& op, const std::string& name, DType dt,
                       std::vector<int64_t> shape) {
    if (p_.find_tensor(name) >= 0) bad(op, "scratch tensor name '" + name + "' is already taken");
    return p_.add_tensor(Tensor{name, dt, std::move(shape), TensorRole::kScratch});
  }

  // Calls f(lo, hi) for [0, n) cut into tiles of `tile` (the last one may be smaller).
  template <typename F>
  static void tiles(int64_t n, int64_t tile, F&& f) {
    for (int64_t lo = 0; lo < n; lo += tile) f(lo, std::min(n, lo + tile));
  }

  void emit_op(const Operator& op) {
    switch (op.kind) {
      case OpKind::kEmbedding: return embedding(op);
      case OpKind::kRmsNorm: return rms_norm(op);
      case OpKind::kLinear: return linear(op, TaskKind::kLinear, o_.tile);
      case OpKind::kLmHead: return linear(op, TaskKind::kLmHead, o_.lm_head_tile);
      case OpKind::kQkNorm: return qk_norm(op);
      case OpKind::kRope: return rope(op);
      case OpKind::kKvAppend: return kv_append(op);
      case OpKind::kAttention: return attention(op);
      case OpKind::kSiluMul: return elementwise(op, TaskKind::kSiluMul, 4);
      case OpKind::kResidualAdd: return elementwise(op, TaskKind::kResidualAdd, 1);
      case OpKind::kArgmax: return argmax(op);
    }
    bad(op, "unknown operator kind");
  }

  int64_t elementwise_tile(int64_t cols) const {
    return o_.elementwise_tile.value_or(auto_elementwise_tile(cols, sms_));
  }

  void embedding(const Operator& op) {
    arity(op, 2, 1);
    const TensorId table = op.inputs[0], tok = op.inputs[1], y = op.outputs[0];
    const int64_t v = shape(op, table, 2)[0], h = shape(op, table, 2)[1];
    const int64_t b = shape(op, tok, 1)[0];
    shape(op, y, 2);
    // Traffic: the B table rows actually gathered, not the whole [0:V] read region.
    tiles(h, elementwise_tile(h), [&](int64_t c0, int64_t c1) {
      const int64_t bytes = b * (c1 - c0) * (esize(table) + esize(y)) + b * esize(tok);
      task(TaskKind::kEmbedding, {reg(table, {{0, v}, {c0, c1}}), reg(tok, {{0, b}})},
           {reg(y, {{0, b}, {c0, c1}})}, 0, bytes);
    });
  }

  void rms_norm(const Operator& op) {
    arity(op, 2, 1);
    const TensorId x = op.inputs[0], w = op.inputs[1], y = op.outputs[0];
    const auto& xs = shape(op, x, 2);
    const int64_t b = xs[0], h = xs[1];
    task(TaskKind::kRmsNorm, {reg(x, {{0, b}, {0, h}}), reg(w, {{0, shape(op, w, 1)[0]}})},
         {reg(y, {{0, b}, {0, h}})}, 4 * b * h);
  }

  // The forms of ir/module.h LinearForm: a residual (read per column tile) or a norm
  // weight (read whole); a swiglu also reads its up weight rows; an lm_head with argmax
  // also writes each task's argmax partial, then one argmax_reduce follows.
  // Rows per unit of a cooperative linear with n output rows and `row_bytes` weight
  // bytes per output row, 0 when it stays tiled: a linear whose x another linear reads
  // too (codegen runs such siblings, q/k/v, as a group) never is; auto takes operators of
  // at least 2 units per SM. A unit streams about kCoopUnitBytes (8..64 rows): the last
  // units of an operator are its tail, so they must be short.
  static constexpr int64_t kCoopUnitBytes = 64 * 1024;
  int64_t coop_unit_rows(const LinearForm& f, int64_t n, int64_t row_bytes) const {
    if (o_.coop == Coop::kOff) return 0;
    for (OpId r : p_.readers[f.x])
      if (r != op_ && linear_form(p_.ops[r]).x == f.x) return 0;
    const int64_t unit =
        o_.coop_unit.value_or(std::clamp<int64_t>(kCoopUnitBytes / row_bytes / 8 * 8, 8, 64));
    if (o_.coop == Coop::kAuto && ceil_div(n, unit) < 2 * sms_) return 0;
    return unit;
  }

  void linear(const Operator& op, TaskKind kind, std::optional<int64_t> tile_opt) {
    const LinearForm f = linear_form(op);
    arity(op, f.num_inputs(), f.tokens >= 0 ? 2 : 1);
    const int64_t b = shape(op, f.x, 2)[0], k = shape(op, f.x, 2)[1];
    const int64_t n = shape(op, f.weight, 2)[0];
    shape(op, f.y, 2);
    const int64_t products = f.swiglu() ? 2 : 1;
    auto reads_of = [&](int64_t n0, int64_t n1) {
      std::vector<Region> reads = {reg(f.x, {{0, b}, {0, k}}), reg(f.weight, {{n0, n1}, {0, k}})};
      if (f.swiglu()) reads.push_back(reg(f.up, {{n0, n1}, {0, k}}));
      if (f.residual >= 0) reads.push_back(reg(f.residual, {{0, b}, {n0, n1}}));
      if (f.norm >= 0) reads.push_back(reg(f.norm, {{0, k}}));
      return reads;
    };
    auto flops_of = [&](int64_t rows) {
      return products * 2 * b * rows * k + (f.swiglu() ? 4 * b * rows : 0) + (f.tokens >= 0 ? b * rows : 0);
    };
    const int64_t row_bytes = products * k * esize(f.weight);
    if (const int64_t unit = coop_unit_rows(f, n, row_bytes); unit > 0) {
      // Every share declares the whole operator (and its own argmax partial slot).
      const int64_t shares = sms_;
      const ArgmaxScratch am = f.tokens >= 0 ? argmax_scratch(op, b, shares) : ArgmaxScratch{};
      std::vector<Region> reads = reads_of(0, n);
      std::vector<Region> writes = {reg(f.y, {{0, b}, {0, n}})};
      const int64_t bytes = regions_bytes(reads) + regions_bytes(writes);
      for (int64_t s = 0; s < shares; ++s) {
        std::vector<Region> w = writes;
        if (f.tokens >= 0) {
          w.push_back(reg(am.val, {{0, b}, {s, s + 1}}));
          w.push_back(reg(am.idx, {{0, b}, {s, s + 1}}));
        }
        task(kind, reads, std::move(w), ceil_div(flops_of(n), shares), ceil_div(bytes, shares),
             Attrs{{"share", s}, {"shares", shares}, {"unit_rows", unit}});
      }
      if (f.tokens >= 0) argmax_reduce(am, b, f.tokens);
      return;
    }
    const int64_t tile = tile_opt.value_or(auto_linear_tile(n, sms_));
    const ArgmaxScratch am = f.tokens >= 0 ? argmax_scratch(op, b, ceil_div(n, tile)) : ArgmaxScratch{};
    int64_t part = 0;
    tiles(n, tile, [&](int64_t n0, int64_t n1) {
      std::vector<Region> writes = {reg(f.y, {{0, b}, {n0, n1}})};
      if (f.tokens >= 0) {
        writes.push_back(reg(am.val, {{0, b}, {part, part + 1}}));
        writes.push_back(reg(am.idx, {{0, b}, {part, part + 1}}));
        ++part;
      }
      task(kind, reads_of(n0, n1), std::move(writes), flops_of(n1 - n0));
    });
    if (f.tokens >= 0) argmax_reduce(am, b, f.tokens);
  }

  void qk_norm(const Operator& op) {
    arity(op, 2, 1);
    const TensorId x = op.inputs[0], w = op.inputs[1], y = op.outputs[0];
    const int64_t b = shape(op, x, 2)[0], width = shape(op, x, 2)[1];
    const int64_t hd = shape(op, w, 1)[0];
    task(TaskKind::kQkNorm, {reg(x, {{0, b}, {0, width}}), reg(w, {{0, hd}})},
         {reg(y, {{0, b}, {0, width}})}, 4 * b * width);
  }

  void rope(const Operator& op) {
    arity(op, 1, 1);
    const TensorId x = op.inputs[0], y = op.outputs[0];
    const int64_t b = shape(op, x, 2)[0], width = shape(op, x, 2)[1];
    // Per element: the angle, its cos and sin, two products and a sum.
    task(TaskKind::kRope, {reg(x, {{0, b}, {0, width}})}, {reg(y, {{0, b}, {0, width}})},
         6 * b * width);
  }

  void kv_append(const Operator& op) {
    arity(op, 2, 2);
    const TensorId k = op.inputs[0], v = op.inputs[1], kc = op.outputs[0], vc = op.outputs[1];
    const auto& cs = shape(op, kc, 4);
    shape(op, vc, 4);
    const int64_t b = cs[0], s = cs[1], nkv = cs[2], hd = cs[3];
    // Traffic: the B rows of one position actually copied, not the whole [0:S] range.
    for (int64_t h = 0; h < nkv; ++h) {
      const Range cols{h * hd, (h + 1) * hd};
      const int64_t bytes = 2 * b * hd * (esize(k) + esize(kc));
      task(TaskKind::kKvAppend, {reg(k, {{0, b}, cols}), reg(v, {{0, b}, cols})},
           {reg(kc, {{0, b}, {0, s}, {h, h + 1}, {0, hd}}),
            reg(vc, {{0, b}, {0, s}, {h, h + 1}, {0, hd}})},
           0, bytes);
    }
  }

  // Plain or fused (ir/module.h AttentionForm). A fused attention also norms and ropes
  // its q heads from raw q, and appends k and v. With one split, an attention task
  // serves `heads` query heads of one kv head: when that is the whole group it also
  // appends the kv head; otherwise the kv head's tasks each prepare this position's k
  // and v for themselves and one kv_append task per kv head, after all of them, stores
  // them (docs/ir.md). With several splits, the kv_append tasks come first and the
  // partials read what they stored.
  void attention(const Operator& op) {
    const AttentionForm f = attention_form(op);
    if (f.fused())
      arity(op, f.q_norm >= 0 ? 7 : 5, 3);
    else
      arity(op, 3, 1);
    const TensorId q = f.q, kc = f.k_cache, vc = f.v_cache, y = f.y;
    const auto& cs = shape(op, kc, 4);
    shape(op, vc, 4);
    shape(op, q, 2);
    shape(op, y, 2);
    const int64_t b = cs[0], s = cs[1], nkv = cs[2], hd = cs[3];
    const int64_t nq = attr_int(op.attrs, "num_q_heads");
    if (nq <= 0 || nq % nkv != 0) bad(op, "num_q_heads must be a positive multiple of the cache's kv heads");
    const int64_t g = nq / nkv;
    int64_t splits = o_.attention_splits.value_or(auto_attention_splits(s, nkv, sms_));
    if (splits > s)
      throw Error("option 'attention-splits' (" + std::to_string(splits) +
                  ") exceeds max_seq_len (" + std::to_string(s) + ") of operator '" + op.name + "'");
    const int64_t heads = o_.attention_heads.value_or(auto_attention_heads(nq, g, hd, sms_));
    if (g % heads != 0)
      throw Error("option 'attention-heads' (" + std::to_string(heads) + ") does not divide the " +
                  std::to_string(g) + " query heads per kv head of operator '" + op.name + "'");
    auto qcols = [&](int64_t j0, int64_t j1) { return Range{j0 * hd, j1 * hd}; };
    auto kcols = [&](int64_t h) { return Range{h * hd, (h + 1) * hd}; };
    auto cache = [&](TensorId t, int64_t h, int64_t s0, int64_t s1) {
      return reg(t, {{0, b}, {s0, s1}, {h, h + 1}, {0, hd}});
    };
    // Per (row, query head, position): q.k, p.v (2 hd each) and the softmax update.
    auto attn_flops = [&](int64_t q_heads, int64_t positions) { return b * q_heads * positions * (4 * hd + 5); };
    // Per fused head (norm 4, RoPE 6 per element); the bytes of one stored position.
    const int64_t prep_flops = f.fused() ? b * hd * (6 + (f.q_norm >= 0 ? 4 : 0)) : 0;
    const int64_t append_bytes = 2 * b * hd * esize(kc);
    auto norm_w = [&](TensorId w) { return reg(w, {{0, hd}}); };
    auto kv_append = [&](int64_t h) {
      std::vector<Region> reads = {reg(f.k, {{0, b}, kcols(h)}), reg(f.v, {{0, b}, kcols(h)})};
      if (f.k_norm >= 0) reads.push_back(norm_w(f.k_norm));
      const int64_t bytes = regions_bytes(reads) + append_bytes;
      task(TaskKind::kKvAppend, std::move(reads), {cache(kc, h, 0, s), cache(vc, h, 0, s)}, prep_flops, bytes);
    };
    if (splits == 1) {
      const bool appends = f.fused() && heads == g;
      for (int64_t h = 0; h < nkv; ++h)
        for (int64_t j0 = h * g; j0 < (h + 1) * g; j0 += heads) {
          std::vector<Region> reads = {reg(q, {{0, b}, qcols(j0, j0 + heads)})};
          std::vector<Region> writes = {reg(y, {{0, b}, qcols(j0, j0 + heads)})};
          if (f.fused()) {
            reads.push_back(reg(f.k, {{0, b}, kcols(h)}));
            reads.push_back(reg(f.v, {{0, b}, kcols(h)}));
            if (f.q_norm >= 0) reads.insert(reads.end(), {norm_w(f.q_norm), norm_w(f.k_norm)});
          }
          if (appends) writes.insert(writes.end(), {cache(kc, h, 0, s), cache(vc, h, 0, s)});
          reads.insert(reads.end(), {cache(kc, h, 0, s), cache(vc, h, 0, s)});
          const int64_t bytes =
              f.fused() ? regions_bytes(reads) + region_bytes(writes[0]) + (appends ? append_bytes : 0) : -1;
          task(TaskKind::kAttention, std::move(reads), std::move(writes),
               attn_flops(heads, s) + (heads + 1) * prep_flops, bytes);
        }
      if (f.fused() && !appends)
        for (int64_t h = 0; h < nkv; ++h) kv_append(h);
      return;
    }
    if (f.fused())
      for (int64_t h = 0; h < nkv; ++h) kv_append(h);
    const std::string part_name =
        "attn_part." + (op.layer >= 0 ? std::to_string(op.layer) : op.name);
    const TensorId part = add_scratch(op, part_name, DType::kF32, {b, nq, splits, hd + 2});
    // Balanced position ranges: split i covers [i*S/splits, (i+1)*S/splits).
    for (int64_t h = 0; h < nkv; ++h)
      for (int64_t i = 0; i < splits; ++i) {
        const int64_t s0 = i * s / splits, s1 = (i + 1) * s / splits;
        std::vector<Region> reads = {reg(q, {{0, b}, qcols(h * g, (h + 1) * g)})};
        if (f.q_norm >= 0) reads.push_back(norm_w(f.q_norm));
        reads.insert(reads.end(), {cache(kc, h, s0, s1), cache(vc, h, s0, s1)});
        task(TaskKind::kAttentionPartial, std::move(reads),
             {reg(part, {{0, b}, {h * g, (h + 1) * g}, {i, i + 1}, {0, hd + 2}})},
             attn_flops(g, s1 - s0) + g * prep_flops);
      }
    for (int64_t h = 0; h < nkv; ++h)
      task(TaskKind::kAttentionMerge,
           {reg(part, {{0, b}, {h * g, (h + 1) * g}, {0, splits}, {0, hd + 2}})},
           {reg(y, {{0, b}, qcols(h * g, (h + 1) * g)})}, b * g * splits * (2 * hd + 5));
  }

  void elementwise(const Operator& op, TaskKind kind, int64_t flops_per_element) {
    arity(op, 2, 1);
    const TensorId a = op.inputs[0], c = op.inputs[1], y = op.outputs[0];
    const int64_t b = shape(op, y, 2)[0], cols = shape(op, y, 2)[1];
    shape(op, a, 2);
    shape(op, c, 2);
    tiles(cols, elementwise_tile(cols), [&](int64_t c0, int64_t c1) {
      task(kind, {reg(a, {{0, b}, {c0, c1}}), reg(c, {{0, b}, {c0, c1}})},
           {reg(y, {{0, b}, {c0, c1}})}, flops_per_element * b * (c1 - c0));
    });
  }

  // The argmax partials of `parts` vocabulary tiles: f32 values and i32 indices [B, P].
  struct ArgmaxScratch {
    TensorId val = -1, idx = -1;
    int64_t parts = 0;
  };
  ArgmaxScratch argmax_scratch(const Operator& op, int64_t b, int64_t parts) {
    return {add_scratch(op, "argmax_val", DType::kF32, {b, parts}),
            add_scratch(op, "argmax_idx", DType::kI32, {b, parts}), parts};
  }
  void argmax_reduce(const ArgmaxScratch& am, int64_t b, TensorId tokens) {
    task(TaskKind::kArgmaxReduce,
         {reg(am.val, {{0, b}, {0, am.parts}}), reg(am.idx, {{0, b}, {0, am.parts}})},
         {reg(tokens, {{0, b}})}, b * am.parts);
  }

  void argmax(const Operator& op) {
    arity(op, 1, 1);
    const TensorId logits = op.inputs[0], tokens = op.outputs[0];
    const int64_t b = shape(op, logits, 2)[0], v = shape(op, logits, 2)[1];
    shape(op, tokens, 1);
    const int64_t tile = o_.argmax_tile.value_or(auto_argmax_tile(v, sms_));
    const ArgmaxScratch am = argmax_scratch(op, b, ceil_div(v, tile));
    int64_t p = 0;
    tiles(v, tile, [&](int64_t v0, int64_t v1) {
      task(TaskKind::kArgmaxPartial, {reg(logits, {{0, b}, {v0, v1}})},
           {reg(am.val, {{0, b}, {p, p + 1}}), reg(am.idx, {{0, b}, {p, p + 1}})}, b * (v1 - v0));
      ++p;
    });
    argmax_reduce(am, b, tokens);
  }

  Module& m_;
  Program& p_;
  const DecomposeOptions o_;
  const int64_t sms_;
  OpId op_ = -1;
};

class DecomposePass : public Pass {
 public:
  explicit DecomposePass(DecomposeOptions o) : o_(o) {}
  PassResult run(Module& m) override {
    try {
      Decomposer(m, o_).run();
    } catch (const Error& e) {
      return PassResult::failure(e.what());
    }
    return PassResult::ok(true);
  }

 private:
  DecomposeOptions o_;
};

PassInfo decompose_pass_info() {
  using O = DecomposeOptions;
  return typed_pass_info(
      kPass,
      "split every operator into tasks with read/write regions, bytes and flops (clears any "
      "previous events and schedule)",
      // Positive integers, or "auto" (the default, computed from the machine model).
      OptionSchema<O>()
          .integer("tile", &O::tile,
                   "N columns per linear task; auto: ceil(N / sm_count) rounded up to a multiple "
                   "of 8, at least 8",
                   1)
          .integer("lm-head-tile", &O::lm_head_tile, "vocab rows per lm_head task; auto: as for tile",
                   1)
          .integer("elementwise-tile", &O::elementwise_tile,
                   "columns per embedding / silu_mul / residual_add task; auto: ceil(cols / "
                   "sm_count) rounded up to a multiple of 64, at least 256",
                   1)
          .integer("attention-splits", &O::attention_splits,
                   "position splits per kv head (>1: attention_partial + attention_merge tasks); "
                   "auto: 1 when S <= 512, else min(ceil(S / 256), max(1, sm_count / "
                   "num_kv_heads))",
                   1)
          .integer("attention-heads", &O::attention_heads,
                   "query heads per attention task with one split (a divisor of the query heads "
                   "per kv head; fewer than all: a fused attention's kv heads are appended by "
                   "kv_append tasks after them); auto: the most, dividing the group, with heads x "
                   "head_dim <= 128, where num_q_heads / heads <= sm_count, else all",
                   1)
          .integer("argmax-tile", &O::argmax_tile,
                   "logits per argmax_partial task; auto: ceil(V / sm_count) rounded up to a "
                   "multiple of 64, at least 64",
                   1)
          .choice("coop", &O::coop,
                  "cooperative linears (sm_count shares whose units the SMs claim at run time): "
                  "auto: linears and lm_heads of at least 2 units per SM that no other linear "
                  "shares x with; on: every such linear; off: none",
                  {{"auto", Coop::kAuto}, {"on", Coop::kOn}, {"off", Coop::kOff}})
          .integer("coop-unit", &O::coop_unit,
                   "output rows per unit of a cooperative linear; auto: the rows of 64 KiB of "
                   "weights (a SwiGLU row counts both weights), rounded down to a multiple of 8, "
                   "within 8..64",
                   8),
      [](const O& o) {
        if (o.coop_unit && *o.coop_unit % 8 != 0)
          throw Error("pass '" + std::string(kPass) +
                      "': option 'coop-unit' must be a multiple of 8, got " +
                      std::to_string(*o.coop_unit));
        return std::make_unique<DecomposePass>(o);
      });
}

}  // namespace

MPK_PASS(decompose_pass_info);

}  // namespace mpk
