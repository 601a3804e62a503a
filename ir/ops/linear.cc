// The linear family in the ir layer: linear and lm_head operators (every form of
// ir/ops/linear.h), their linear / lm_head tasks and cooperative shares.
#include "ir/ops/linear.h"

#include "ir/ops/op_check.h"

namespace mpk {

LinearForm linear_form(const Operator& op) {
  LinearForm f;
  if ((op.kind != OpKind::kLinear && op.kind != OpKind::kLmHead) || op.inputs.size() < 2) return f;
  const bool swiglu = op.attrs.count("activation") > 0, bias = op.attrs.count("bias") > 0;
  const size_t base = (swiglu ? 3 : 2) + (bias ? 1 : 0);
  if (op.inputs.size() < base) return f;
  f.x = op.inputs[0];
  f.weight = op.inputs[1];
  if (swiglu) f.up = op.inputs[2];
  if (bias) f.bias = op.inputs[base - 1];
  if (op.inputs.size() > base) (op.attrs.count("eps") ? f.norm : f.residual) = op.inputs[base];
  if (!op.outputs.empty()) f.y = op.outputs[0];
  if (op.kind == OpKind::kLmHead && op.outputs.size() > 1) f.tokens = op.outputs[1];
  return f;
}

LinearExtra linear_extra(const Operator& op) {
  const LinearForm f = linear_form(op);
  if (f.residual >= 0) return LinearExtra::kResidual;
  return f.norm >= 0 ? LinearExtra::kNorm : LinearExtra::kNone;
}

CoopShare coop_share(const Task& t) {
  CoopShare c;
  auto get = [&](const char* key) -> int64_t {
    const auto it = t.attrs.find(key);
    return it != t.attrs.end() && std::holds_alternative<int64_t>(it->second) ? std::get<int64_t>(it->second) : 0;
  };
  c.shares = get("shares");
  if (c.shares <= 0) return CoopShare{};
  c.share = get("share");
  c.unit_rows = get("unit_rows");
  return c;
}

std::vector<Region> linear_task_reads(const Program& p, const LinearForm& f, Range n) {
  const int64_t b = p.tensor(f.x).shape[0], k = p.tensor(f.x).shape[1];
  std::vector<Region> reads = {Region{f.x, {{0, b}, {0, k}}}, Region{f.weight, {n, {0, k}}}};
  if (f.up >= 0) reads.push_back(Region{f.up, {n, {0, k}}});
  if (f.residual >= 0) reads.push_back(Region{f.residual, {{0, p.tensor(f.residual).shape[0]}, n}});
  if (f.norm >= 0) reads.push_back(Region{f.norm, {{0, k}}});
  if (f.bias >= 0) reads.push_back(Region{f.bias, {n}});
  return reads;
}

namespace ops {

// linear: x [B,K], W [N,K] -> y [B,N]; lm_head: the same with y f32. The forms of
// ir/ops/linear.h: a residual or a norm weight, swiglu, lm_head with tokens.
void linear_signature(OpSignature& s) {
  const Operator& op = s.op();
  const bool lm_head = op.kind == OpKind::kLmHead;
  const LinearForm f = linear_form(op);
  if (op.attrs.count("activation")) {
    if (lm_head) s.bad("an lm_head takes no attribute 'activation'");
    if (attr_str(op.attrs, "activation") != "swiglu")
      s.bad("attribute 'activation' = \"" + attr_str(op.attrs, "activation") + "\" is not \"swiglu\"");
    if (op.inputs.size() < 3) s.bad("a swiglu linear expects inputs (x, Wg, Wu) or (x, Wg, Wu, norm_w)");
  }
  if (op.attrs.count("bias")) {
    if (attr_int(op.attrs, "bias") != 1) s.bad("attribute 'bias' must be 1");
    if (lm_head || op.attrs.count("activation"))
      s.bad(std::string(lm_head ? "an lm_head" : "a swiglu linear") + " takes no bias");
    if (op.inputs.size() < 3) s.bad("a linear with a bias expects inputs (x, W, bias), then a residual or norm_w");
  }
  if (op.attrs.count("parallel")) {
    const std::string how = attr_str(op.attrs, "parallel");
    if (lm_head && how != "column")
      s.bad("an lm_head is split by its vocabulary rows only: attribute 'parallel' must be \"column\"");
    if (how != "column" && how != "row")
      s.bad("attribute 'parallel' = \"" + how + "\" is neither \"column\" nor \"row\"");
    if (how == "row" && (f.bias >= 0 || f.residual >= 0 || f.norm >= 0 || f.swiglu()))
      s.bad("a row-parallel linear computes a partial product only: no bias, residual, norm or swiglu");
  }
  if (f.residual >= 0 && (lm_head || f.swiglu()))
    s.bad(std::string(lm_head ? "an lm_head" : "a swiglu linear") +
          " takes no residual (a norm weight needs attribute 'eps')");
  s.arity(f.num_inputs(), lm_head && op.outputs.size() == 2 ? 2 : 1);
  const auto& x = s.rank(s.in(0), "x", 2);
  const std::string wname = f.swiglu() ? "Wg" : "W";
  const auto& w = s.rank(s.in(1), wname, 2);
  const auto& y = s.rank(s.out(0), lm_head ? "logits" : "y", 2);
  s.floating(s.in(0), "x");
  s.floating(s.in(1), wname);
  if (lm_head)
    s.dtype(s.out(0), "logits", DType::kF32);
  else
    s.floating(s.out(0), "y");
  s.dim(w[1], x[1], wname + " dimension 1 (K)");
  s.dim(y[0], x[0], "output dimension 0 (batch)");
  s.dim(y[1], w[0], "output dimension 1 (N)");
  if (f.swiglu()) {
    s.rank(s.tensor(f.up), "Wu", 2);
    s.floating(s.tensor(f.up), "Wu");
    s.same_shape(s.tensor(f.up), "Wu", s.in(1), "Wg");
  }
  if (f.bias >= 0) {
    const auto& bias = s.rank(s.tensor(f.bias), "bias", 1);
    s.floating(s.tensor(f.bias), "bias");
    s.dim(bias[0], w[0], "bias length (N)");
  }
  if (f.residual >= 0) {
    s.floating(s.tensor(f.residual), "residual");
    s.same_shape(s.tensor(f.residual), "residual", s.out(0), "y");
  } else if (f.norm >= 0) {
    const Tensor& nt = s.tensor(f.norm);
    const auto& nw = s.rank(nt, "norm_w", 1);
    s.floating(nt, "norm_w");
    s.dim(nw[0], x[1], "norm_w dimension 0 (K)");
    s.positive_float("eps");
  }
  if (f.tokens >= 0) {
    const auto& t = s.rank(s.out(1), "tokens", 1);
    s.dtype(s.out(1), "tokens", DType::kI32);
    s.dim(t[0], x[0], "tokens length (batch)");
  }
}

// An lm_head with argmax also reduces its partials (argmax_reduce).
bool linear_owns_task(const Operator& op, TaskKind k) {
  if (op.kind == OpKind::kLinear) return k == TaskKind::kLinear;
  return k == TaskKind::kLmHead || (k == TaskKind::kArgmaxReduce && linear_form(op).tokens >= 0);
}

// Tiles: the rows of its output columns (linear_task_reads); a cooperative share
// declares the whole output. With an argmax, also its partial slot (a share's slot is
// its share).
TaskRegions linear_task_regions(const TaskRegionRules& r, const Task& task) {
  const LinearForm lf = linear_form(r.op_of(task));
  const CoopShare coop = coop_share(task);
  const Range n = coop.cooperative() ? r.all(lf.weight) : r.key(task, lf.y, "output").dims[1];
  TaskRegions f;
  f.reads = linear_task_reads(r.program(), lf, n);
  f.writes = {r.reg(lf.y, {r.all(lf.y), n})};
  if (lf.tokens < 0) return f;
  const OpScratch& sc = r.scratch();
  const TensorId val = r.need(sc.val, "argmax partial");
  const int64_t p = coop.cooperative() ? coop.share : r.key(task, val, "argmax partial").dims[1].lo;
  f.writes.push_back(r.reg(val, {r.all(val), {p, p + 1}}));
  f.writes.push_back(r.reg(sc.idx, {r.all(sc.idx), {p, p + 1}}));
  return f;
}

}  // namespace ops
}  // namespace mpk
