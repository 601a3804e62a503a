// CPU, argmax family: the index of the largest logit per row, lowest on ties
// (numerics.h argmax_row), as argmax_partial tasks over vocabulary tiles and one
// argmax_reduce over the partials in order (which also ends an lm_head fused with its
// argmax). A vocab-parallel argmax (docs/ir.md "Tensor parallel") reduces every rank's
// partials, rank r's indices offset by r times the rank's logits width.
#include "ir/ops/tensor_parallel.h"
#include "runtime/cpu/ops/cpu_ops.h"

namespace mpk::cpu {

void argmax_rows(const TensorBuffer& logits, TensorBuffer& tokens, const StepContext& ctx) {
  for (int64_t b = 0; b < logits.shape[0]; ++b) {
    float v;
    int32_t i;
    const bool finite = argmax_row(logits, b, 0, logits.shape[1], &v, &i);
    tokens.store_i32(b, i);
    if (!ctx.recorder) continue;
    ctx.recorder->record(ctx.step, b, i, v);
    if (!finite) ctx.recorder->mark_non_finite(ctx.step, b);
  }
}

void run_argmax_op(const Program&, const Operator& op, TensorStore& st, const StepContext& ctx) {
  argmax_rows(st.at(op.inputs[0]), st.at(op.outputs[0]), ctx);
}

namespace {

// One rank's argmax partials and the offset of its indices in the whole vocabulary.
struct Partials {
  const TensorBuffer* val;
  const TensorBuffer* idx;
  int64_t offset;
};

// The largest partial value of each row and its lowest index, scanning in order.
void reduce_partials(const std::vector<Partials>& ranks, TensorBuffer& tokens, int64_t b0, int64_t b1,
                     const StepContext& ctx) {
  const int64_t parts = ranks[0].val->shape[1];
  for (int64_t b = b0; b < b1; ++b) {
    float best = ranks[0].val->load(b * parts);
    int32_t bi = ranks[0].idx->load_i32(b * parts);
    for (const Partials& r : ranks)
      for (int64_t q = 0; q < parts; ++q) {
        const float v = r.val->load(b * parts + q);
        const auto i = static_cast<int32_t>(r.idx->load_i32(b * parts + q) + r.offset);
        if (v > best || (v == best && i < bi)) {
          best = v;
          bi = i;
        }
      }
    tokens.store_i32(b, bi);
    if (ctx.recorder) ctx.recorder->record(ctx.step, b, bi, best);
  }
}

TaskRun plan_partial(const TaskResolver& r) {
  r.kind_of_op({OpKind::kArgmax});
  const TensorId logits = r.op().inputs[0];
  const ArgmaxSlot s = argmax_slot(r);
  const Range cols = r.read_on(logits).dims[1];
  r.need(box(logits, {{s.b0, s.b1}, cols}));
  return [=](TensorStore& st, const StepContext& ctx) {
    argmax_partial_block(st.at(logits), st.at(s.val), st.at(s.idx), s.b0, s.b1, cols.lo, cols.hi, s.slot, ctx);
  };
}

TaskRun plan_reduce(const TaskResolver& r) {
  r.kind_of_op({OpKind::kArgmax, OpKind::kLmHead});
  const Operator& op = r.op();
  const TensorId tokens = op.kind == OpKind::kArgmax ? op.outputs[0] : linear_form(op).tokens;
  r.require(tokens >= 0, "an argmax_reduce task belongs to an lm_head with an argmax only");
  const TensorId val = r.scratch(false, DType::kF32), idx = r.scratch(false, DType::kI32);
  const auto& vs = r.tensor(val).shape;
  r.require(vs.size() == 2 && r.tensor(idx).shape == vs && vs[0] == r.tensor(tokens).shape[0] && vs[1] >= 1,
            "argmax partial tensors must both be [B, P]");
  const RowsCols rc = rows_cols(r.write_on(tokens));
  for (TensorId t : {val, idx}) r.need(box(t, {{rc.b0, rc.b1}, {0, vs[1]}}));
  const int64_t width = r.tensor(op.kind == OpKind::kArgmax ? op.inputs[0] : op.outputs[0]).shape[1];
  const bool every_rank = vocab_parallel(op);
  return [=](TensorStore& st, const StepContext& ctx) {
    std::vector<Partials> ranks;
    if (every_rank && ctx.rank_stores)
      for (const TensorStore* rank : *ctx.rank_stores)
        ranks.push_back({&rank->at(val), &rank->at(idx), static_cast<int64_t>(ranks.size()) * width});
    else
      ranks.push_back({&st.at(val), &st.at(idx), 0});
    reduce_partials(ranks, st.at(tokens), rc.b0, rc.b1, ctx);
  };
}

}  // namespace

TaskRun plan_argmax_task(const TaskResolver& r) {
  return r.task().kind == TaskKind::kArgmaxPartial ? plan_partial(r) : plan_reduce(r);
}

}  // namespace mpk::cpu
