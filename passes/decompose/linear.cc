// decompose, linear family (linear, lm_head): tiles of output rows, or cooperative
// shares (docs/ir.md, "Cooperative linears"); an lm_head with argmax also writes each
// task's argmax partial, then one argmax_reduce follows. What a task reads is the
// family's one statement of it, linear_task_reads (ir/ops/linear.h).
#include "ir/ops/linear.h"
#include "passes/decompose/decomposer.h"

namespace mpk::decompose {
namespace {

// Above kWideRows rows of x (a prefill chunk's) every task reads all of x again, from L2,
// for each of its row groups: auto tiles are then at least kWideTile rows, and auto keeps
// such linears tiled (a cooperative unit of 8 rows would read x once per 8 rows).
constexpr int64_t kWideRows = 32;
constexpr int64_t kWideTile = 32;

// Rows per unit of a cooperative linear with n output rows and `row_bytes` weight
// bytes per output row, 0 when it stays tiled: a linear whose x another linear reads
// too (codegen runs such siblings, q/k/v, as a group) never is; auto takes operators of
// at least 2 units per SM. A unit streams about kCoopUnitBytes (8..64 rows): the last
// units of an operator are its tail, so they must be short.
constexpr int64_t kCoopUnitBytes = 64 * 1024;
int64_t coop_unit_rows(const Decomposer& d, const LinearForm& f, int64_t n, int64_t row_bytes) {
  const DecomposeOptions& o = d.options();
  if (o.coop == Coop::kOff || (o.coop == Coop::kAuto && d.shape(f.x)[0] > kWideRows)) return 0;
  for (OpId r : d.program().readers[f.x])
    if (r != d.current_op() && linear_form(d.program().ops[r]).x == f.x) return 0;
  const int64_t unit = o.coop_unit.value_or(std::clamp<int64_t>(kCoopUnitBytes / row_bytes / 8 * 8, 8, 64));
  if (o.coop == Coop::kAuto && ceil_div(n, unit) < 2 * d.sms()) return 0;
  return unit;
}

// Every share declares the whole operator (and its own argmax partial slot).
void cooperative(Decomposer& d, const Operator& op, TaskKind kind, const LinearForm& f, int64_t unit,
                 int64_t flops) {
  const int64_t b = d.shape(f.x)[0], n = d.shape(f.weight)[0];
  const int64_t shares = d.sms();
  const ArgmaxScratch am = f.tokens >= 0 ? d.argmax_scratch(op, b, shares) : ArgmaxScratch{};
  const std::vector<Region> reads = linear_task_reads(d.program(), f, {0, n});
  const std::vector<Region> writes = {d.reg(f.y, {{0, b}, {0, n}})};
  const int64_t bytes = d.regions_bytes(reads) + d.regions_bytes(writes);
  for (int64_t s = 0; s < shares; ++s) {
    std::vector<Region> w = writes;
    if (f.tokens >= 0) {
      w.push_back(d.reg(am.val, {{0, b}, {s, s + 1}}));
      w.push_back(d.reg(am.idx, {{0, b}, {s, s + 1}}));
    }
    d.task(kind, reads, std::move(w), ceil_div(flops, shares), ceil_div(bytes, shares),
           Attrs{{"share", s}, {"shares", shares}, {"unit_rows", unit}});
  }
  if (f.tokens >= 0) d.argmax_reduce(am, b, f.tokens);
}

}  // namespace

// Auto tile (docs/passes.md): ceil(N / sm_count) rounded up to a multiple of 8, at least 8
// (kWideTile above kWideRows rows).
void decompose_linear(Decomposer& d, const Operator& op) {
  const bool lm_head = op.kind == OpKind::kLmHead;
  const TaskKind kind = lm_head ? TaskKind::kLmHead : TaskKind::kLinear;
  const LinearForm f = linear_form(op);
  const int64_t b = d.shape(f.x)[0], k = d.shape(f.x)[1], n = d.shape(f.weight)[0];
  const int64_t products = f.swiglu() ? 2 : 1;
  auto flops_of = [&](int64_t rows) {
    return products * 2 * b * rows * k + (f.swiglu() ? 4 * b * rows : 0) + (f.tokens >= 0 ? b * rows : 0);
  };
  if (const int64_t unit = coop_unit_rows(d, f, n, products * k * d.esize(f.weight)); unit > 0)
    return cooperative(d, op, kind, f, unit, flops_of(n));
  const std::optional<int64_t> tile_opt = lm_head ? d.options().lm_head_tile : d.options().tile;
  const int64_t least = b > kWideRows ? kWideTile : 8;
  const int64_t tile = tile_opt.value_or(std::max<int64_t>(least, round_up(ceil_div(n, d.sms()), 8)));
  const ArgmaxScratch am = f.tokens >= 0 ? d.argmax_scratch(op, b, ceil_div(n, tile)) : ArgmaxScratch{};
  int64_t part = 0;
  Decomposer::tiles(n, tile, [&](int64_t n0, int64_t n1) {
    std::vector<Region> writes = {d.reg(f.y, {{0, b}, {n0, n1}})};
    if (f.tokens >= 0) {
      writes.push_back(d.reg(am.val, {{0, b}, {part, part + 1}}));
      writes.push_back(d.reg(am.idx, {{0, b}, {part, part + 1}}));
      ++part;
    }
    d.task(kind, linear_task_reads(d.program(), f, {n0, n1}), std::move(writes), flops_of(n1 - n0));
  });
  if (f.tokens >= 0) d.argmax_reduce(am, b, f.tokens);
}

}  // namespace mpk::decompose
