// CPU, linear family (linear and lm_head in every form of ir/ops/linear.h): its
// arithmetic, y[b, n] = x[b, :] . W[n, :]^T in the canonical lane order (lane_order.h,
// bf16 weights through linear_simd.h) with the fused prologue and epilogues, and the
// operator and task runs (tiles, cooperative shares, the argmax partial of an lm_head
// fused with its argmax).
#include "runtime/cpu/lane_order.h"
#include "runtime/cpu/linear_simd.h"
#include "runtime/cpu/ops/cpu_ops.h"

namespace mpk::cpu {
namespace {

// out[b][n - n0] = sum_k x[b][k] * W[n][k] in the canonical lane order (lane_order.h),
// for f16 / f32 weights (bf16 weights use linear_simd.h).
template <typename T, typename Cvt>
void linear_typed(const float* xs, int64_t rows, int64_t k_len, const T* w, int64_t n0, int64_t n1, float* out,
                  Cvt cvt) {
  const int64_t width = n1 - n0;
  for (int64_t b = 0; b < rows; ++b) {
    const float* x = xs + b * k_len;
    for (int64_t n = n0; n < n1; ++n) {
      const T* wr = w + n * k_len;
      out[b * width + n - n0] = lane_reduce(k_len, [&](int64_t k) { return x[k] * cvt(wr[k]); });
    }
  }
}

// out[b][n - n0] = xs[b] . W[n]^T for rows of xs, in the canonical lane order.
void products(const float* xs, int64_t rows, int64_t k_len, const TensorBuffer& w, int64_t n0, int64_t n1,
              float* out) {
  switch (w.dtype) {
    case DType::kBF16: {
      const auto* wp = static_cast<const uint16_t*>(w.data);
      if (!linear_bf16_simd(xs, rows, k_len, wp, n0, n1, out)) linear_bf16_scalar(xs, rows, k_len, wp, n0, n1, out);
      return;
    }
    case DType::kF16:
      linear_typed(xs, rows, k_len, static_cast<const uint16_t*>(w.data), n0, n1, out,
                   [](uint16_t v) { return f16_to_f32(v); });
      return;
    case DType::kF32:
      linear_typed(xs, rows, k_len, static_cast<const float*>(w.data), n0, n1, out, [](float v) { return v; });
      return;
    case DType::kI32:
      throw Error("linear: integer weights are not supported");
  }
}

// row = rms_norm(row) rounded to bf16, in place (the fused prologue of a linear).
void rms_norm_row_bf16(float* row, int64_t h, const TensorBuffer& w, double eps) {
  const float r = rms_scale(row, h, eps);
  for (int64_t i = 0; i < h; ++i) row[i] = bf16_to_f32(f32_to_bf16(row[i] * r * w.load(i)));
}

// What a linear computes besides x . W^T (ir/ops/linear.h LinearForm): the tensors of
// the form's operands, resolved for a step.
struct LinearExtras {
  const TensorBuffer* bias = nullptr;      // added to the product before it is rounded
  const TensorBuffer* residual = nullptr;  // added to the product rounded to y's dtype
  const TensorBuffer* norm = nullptr;      // x is first rms-normed with this weight
  double eps = 0;
  const TensorBuffer* up = nullptr;  // swiglu: the up weight
};

// y[b0:b1, n0:n1] = x[b0:b1, :] . W[n0:n1, :]^T; with a norm, x rows are replaced by
// rms_norm(x, norm, eps) rounded to bf16 first; with a bias, bias[n0:n1] is added to the
// f32 product before it is rounded to y's dtype; with a residual, the product is rounded
// to y's dtype and residual[b0:b1, n0:n1] added in f32; with an up weight (swiglu),
// y = silu_mul(round_bf16(x . W^T), round_bf16(x . up^T)). All exactly as the unfused ops.
void linear_block(const TensorBuffer& x, const TensorBuffer& w, TensorBuffer& y, int64_t b0, int64_t b1, int64_t n0,
                  int64_t n1, const LinearExtras& extras) {
  const int64_t k_len = x.shape[1], rows = b1 - b0, width = n1 - n0;
  if (rows <= 0 || width <= 0) return;
  std::vector<float>& xs = thread_scratch(0, static_cast<size_t>(rows * k_len));
  std::vector<float>& out = thread_scratch(1, static_cast<size_t>(rows * width));
  x.load_row(b0 * k_len, rows * k_len, xs.data());
  if (extras.norm)
    for (int64_t b = 0; b < rows; ++b) rms_norm_row_bf16(xs.data() + b * k_len, k_len, *extras.norm, extras.eps);
  products(xs.data(), rows, k_len, w, n0, n1, out.data());
  std::vector<float>& up = thread_scratch(2, extras.up ? static_cast<size_t>(rows * width) : 0);
  if (extras.up) products(xs.data(), rows, k_len, *extras.up, n0, n1, up.data());
  const int64_t n_out = y.shape[1];
  for (int64_t b = 0; b < rows; ++b)
    for (int64_t n = n0; n < n1; ++n) {
      const int64_t i = (b0 + b) * n_out + n, o = b * width + n - n0;
      if (extras.up) {  // the gate and up products as their bf16 tensors hold them, then silu_mul
        y.store(i, silu_mul_value(round_bf16(out[o]), round_bf16(up[o])));
        continue;
      }
      y.store(i, extras.bias ? out[o] + extras.bias->load(n) : out[o]);  // no + 0: -0 stays -0
      if (extras.residual) y.store(i, y.load(i) + extras.residual->load(i));
    }
}

LinearExtras extras_of(const LinearForm& f, double eps, const TensorStore& st) {
  LinearExtras e;
  if (f.bias >= 0) e.bias = &st.at(f.bias);
  if (f.residual >= 0) e.residual = &st.at(f.residual);
  if (f.norm >= 0) e.norm = &st.at(f.norm), e.eps = eps;
  if (f.up >= 0) e.up = &st.at(f.up);
  return e;
}

double eps_of(const Operator& op, const LinearForm& f) { return f.norm >= 0 ? attr_float(op.attrs, "eps") : 0; }

}  // namespace

void run_linear_op(const Program&, const Operator& op, TensorStore& st, const StepContext& ctx) {
  const LinearForm f = linear_form(op);
  TensorBuffer& y = st.at(f.y);
  linear_block(st.at(f.x), st.at(f.weight), y, 0, y.shape[0], 0, y.shape[1], extras_of(f, eps_of(op, f), st));
  if (f.tokens >= 0) argmax_rows(y, st.at(f.tokens), ctx);  // fuse-argmax
}

// Rows b0:b1 and output columns n0:n1 (a cooperative share: the whole output, of which
// it computes the units share, share + shares, ...; its argmax partial over their rows
// starts from (-inf, 0), docs/ir.md).
TaskRun plan_linear_task(const TaskResolver& r) {
  r.kind_of_op({r.task().kind == TaskKind::kLinear ? OpKind::kLinear : OpKind::kLmHead});
  const Operator& op = r.op();
  const LinearForm f = linear_form(op);
  const double eps = eps_of(op, f);
  const RowsCols rc = rows_cols(r.write_on(f.y));
  // What the family says such a task reads (ir/ops/linear.h), for its own batch rows.
  for (Region need : linear_task_reads(r.program(), f, {rc.c0, rc.c1})) {
    if (need.tensor == f.x || need.tensor == f.residual) need.dims[0] = {rc.b0, rc.b1};
    r.need(need);
  }
  ArgmaxSlot am;  // also the argmax partial of its vocabulary rows (fuse-argmax)
  if (f.tokens >= 0) {
    am = argmax_slot(r);
    r.require(am.b0 == rc.b0 && am.b1 == rc.b1, "must write the argmax partial of the rows it computes");
  }
  const CoopShare coop = coop_share(r.task());
  if (coop.cooperative())
    r.require(rc.c0 == 0 && rc.c1 == r.tensor(f.weight).shape[0],
              "a cooperative share must declare its operator's whole output");
  return [=](TensorStore& st, const StepContext& ctx) {
    const LinearExtras e = extras_of(f, eps, st);
    if (!coop.cooperative()) {
      linear_block(st.at(f.x), st.at(f.weight), st.at(f.y), rc.b0, rc.b1, rc.c0, rc.c1, e);
      if (f.tokens >= 0)  // fuse-argmax: the argmax partial of the logits just written
        argmax_partial_block(st.at(f.y), st.at(am.val), st.at(am.idx), rc.b0, rc.b1, rc.c0, rc.c1, am.slot, ctx);
      return;
    }
    std::vector<std::pair<int64_t, int64_t>> units;
    for (int64_t u = coop.share; u < coop.units(rc.c1); u += coop.shares)
      units.emplace_back(u * coop.unit_rows, std::min(rc.c1, (u + 1) * coop.unit_rows));
    for (const auto& [n0, n1] : units) linear_block(st.at(f.x), st.at(f.weight), st.at(f.y), rc.b0, rc.b1, n0, n1, e);
    if (f.tokens >= 0) argmax_partial_units(st.at(f.y), st.at(am.val), st.at(am.idx), rc.b0, rc.b1, units, am.slot, ctx);
  };
}

}  // namespace mpk::cpu
