// codegen, linear family: task_linear (plain, with a residual or a norm, an lm_head with
// its argmax, a cooperative share), task_linear_swiglu, and the groups of adjacent
// linears over the same x, task_linear_group (runtime/device/tasks_linear.cuh).
#include <algorithm>

#include "codegen/ops/desc_builder.h"

namespace mpk::codegen {
namespace {

using Slot = abi::slots::Linear;

// With one row (batch 1), x of a linear task sits in shared memory as f32 when that takes
// at most 48 KiB; a fused norm keeps the raw rows (bf16) after it (tasks_linear.cuh,
// load_x_normed). With more (a batch, or a prefill chunk's batch x chunk rows), the
// tensor-core bodies keep x whole, or a ring of slices of a
// chunk's columns (abi::tc_linear_scratch, for `slots` padded rows per row group).
bool x_f32(const DescBuilder& b, int64_t K) { return b.rows == 1 && K * 4 <= 48 * 1024; }
int64_t tc_budget(const DescBuilder& b) { return abi::tc_x_budget(b.out.chunk > 1, b.rows); }
int linear_scratch(const DescBuilder& b, int64_t K, bool norm, int64_t boxes, int64_t slots) {
  if (b.rows >= 2) return static_cast<int>(abi::tc_linear_scratch(b.rows, K, boxes * 64, slots, b.warps, norm, tc_budget(b)).bytes);
  return static_cast<int>((K * (x_f32(b, K) ? 4 : 2) + 15) / 16 * 16 + (norm ? K * 2 : 0));
}

// Boxes per chunk for row groups of `rows` rows of K columns in a task of
// `task_bytes` weights. A warp deals a chunk's boxes to its four lane groups: a task
// whose weights all fit in the ring runs on prefetched chunks, where whole rounds of 4
// boxes are fastest (llama-3.2-1b's q/k/v group: 8-box chunks, not 10); a larger task
// streams, and bytes in flight set its rate (qwen3-8b's: 5-box chunks, not 4). On tensor
// cores x's columns of a chunk may have to fit shared memory twice (abi::tc_max_boxes).
int64_t chunk_boxes(const DescBuilder& b, int64_t rows, int64_t K, int64_t task_bytes, bool norm) {
  const int64_t most = b.rows >= 2 ? abi::tc_max_boxes(b.rows, K, norm, tc_budget(b)) : K / 64;
  const int64_t fit = std::clamp<int64_t>(b.out.slot_bytes / (rows * 128), 1, most);
  const bool prefetched = task_bytes <= int64_t{4} * b.out.slot_bytes;
  return prefetched && fit >= 4 ? fit / 4 * 4 : fit;
}

// The pool of a cooperative share's operator; share 0 (built first) creates it and
// owns the stream image.
int32_t pool_for(DescBuilder& b, TaskId t, const CoopShare& coop, int64_t rows, int64_t unit_chunks) {
  const OpId op = b.task(t).op;
  for (size_t p = 0; p < b.out.pools.size(); ++p)
    if (b.out.pools[p].op == op) return static_cast<int32_t>(p);
  if (coop.share != 0) b.fail(t, "the operator's share 0 must come first");
  b.out.pools.push_back({op, t, static_cast<int32_t>(coop.units(rows)), static_cast<int32_t>(unit_chunks),
                         static_cast<int32_t>(coop.shares)});
  return static_cast<int32_t>(b.out.pools.size() - 1);
}

// The f32 bits of a fused norm's eps (a template argument of the linear bodies), 0
// without one.
int32_t norm_eps_bits(const Operator& op) {
  return linear_form(op).norm >= 0 ? float_bits(static_cast<float>(attr_float(op.attrs, "eps"))) : 0;
}

// The operands' checks; returns the weight rows n0:n1 the task computes.
Range check_operands(const DescBuilder& b, TaskId t, const LinearForm& lo) {
  const Task& task = b.task(t);
  if (lo.weight < 0 || lo.y < 0) b.fail(t, "operator has too few operands");
  const Region& wr = b.find(t, task.reads, lo.weight, "weight");
  const Region& yr = b.find(t, task.writes, lo.y, "output");
  if (yr.dims[1] != wr.dims[0]) b.fail(t, "output columns do not match the weight rows");
  if (lo.up >= 0 && b.find(t, task.reads, lo.up, "up weight").dims[0] != wr.dims[0])
    b.fail(t, "the gate and up weight rows differ");
  const int64_t K = b.tensor(lo.weight).shape[1];
  if (K % 64 != 0) b.fail(t, "K = " + std::to_string(K) + " is not a multiple of 64");
  if (b.rows > abi::kTcMaxChunkRows)
    b.fail(t, std::to_string(b.rows) + " rows (batch x chunk): the tensor-core linears take at most " +
                  std::to_string(abi::kTcMaxChunkRows));
  const bool f32 = b.tensor(lo.y).dtype == DType::kF32;
  if ((lo.residual >= 0 || lo.swiglu()) && f32) b.fail(t, "a linear with a residual or SwiGLU needs a bf16 output");
  for (TensorId extra : {lo.residual, lo.norm, lo.bias})
    if (extra >= 0 && b.tensor(extra).dtype != DType::kBF16)
      b.fail(t, "a linear's residual, norm weight or bias must be bf16");
  return wr.dims[0];
}

// The row groups a task streams (a SwiGLU task streams each row group's gate rows then
// its up rows) and, for a cooperative share, its pool.
struct Tiling {
  int64_t box_rows = 0, boxes = 0, groups = 0, col_chunks = 0, unit_groups = 0;
};
Tiling stream_tiling(DescBuilder& b, TaskId t, const LinearForm& lo, Range n) {
  const int64_t rows = n.size(), K = b.tensor(lo.weight).shape[1], products = lo.swiglu() ? 2 : 1;
  const int64_t max_rows = std::max<int64_t>(8, abi::max_linear_rows(b.warps) / (lo.swiglu() ? 16 : 8) * 8);
  Tiling tl;
  tl.box_rows = std::min<int64_t>({max_rows, b.out.slot_bytes / 128, (rows + 7) / 8 * 8});
  const CoopShare coop = coop_share(b.task(t));  // a cooperative share's row groups tile its units (docs/ir.md)
  if (coop.cooperative()) {
    if (n.lo != 0 || coop.unit_rows % 8 != 0) b.fail(t, "a cooperative share must declare whole units");
    tl.box_rows = std::min<int64_t>(tl.box_rows, coop.unit_rows);
    while (coop.unit_rows % tl.box_rows != 0) tl.box_rows -= 8;
  }
  tl.boxes = chunk_boxes(b, tl.box_rows * products, K, rows * K * 2 * products, lo.norm >= 0);
  tl.groups = (rows + tl.box_rows - 1) / tl.box_rows;
  tl.col_chunks = (K / 64 + tl.boxes - 1) / tl.boxes;
  StreamShape& st = b.out.stream.at(t);
  st.weight = lo.weight;
  st.weight2 = lo.up;
  st.row0 = static_cast<int32_t>(n.lo);
  st.groups = static_cast<int32_t>(tl.groups);
  st.box_rows = static_cast<int32_t>(tl.box_rows);
  st.last_rows = static_cast<int32_t>((rows - (tl.groups - 1) * tl.box_rows + 7) / 8 * 8);
  st.col_chunks = static_cast<int32_t>(tl.col_chunks);
  st.boxes = static_cast<int32_t>(tl.boxes);
  st.boxes_last = static_cast<int32_t>(K / 64 - (tl.col_chunks - 1) * tl.boxes);
  tl.unit_groups = coop.cooperative() ? coop.unit_rows / tl.box_rows : 0;
  if (coop.cooperative()) st.pool = pool_for(b, t, coop, rows, tl.unit_groups * tl.col_chunks);
  if (st.pool < 0 || b.out.pools[st.pool].image == t) b.out.stream_bytes_per_step += rows * K * 2 * products;
  if (st.pool >= 0 && b.out.pools[st.pool].image != t) st.weight = st.weight2 = -1;  // share 0's image
  return tl;
}

}  // namespace

void describe_linear(DescBuilder& b, TaskId t, TaskDescription& out) {
  const Task& task = b.task(t);
  const Operator& op = b.op_of(t);
  const LinearForm lo = linear_form(op);
  const Range n = check_operands(b, t, lo);
  const int64_t K = b.tensor(lo.weight).shape[1], rows = n.size(), B = b.rows, ystride = b.tensor(lo.y).shape[1];
  const bool f32 = b.tensor(lo.y).dtype == DType::kF32, residual = lo.residual >= 0, norm = lo.norm >= 0;
  const Tiling tl = stream_tiling(b, t, lo, n);
  b.reloc(t, Slot::kX, lo.x, 0);
  b.reloc(t, Slot::kY, lo.y, n.lo);
  if (residual) b.reloc(t, Slot::kResidual, lo.residual, n.lo);
  if (norm) b.reloc(t, Slot::kNorm, lo.norm, 0);
  if (lo.bias >= 0) b.reloc(t, Slot::kBias, lo.bias, n.lo);
  DescBuilder::set_arg(out.d, Slot::kRow0, n.lo);
  const std::string x_type = x_f32(b, K) ? "true" : "false";
  const std::string eps = std::to_string(norm_eps_bits(op)), unit_groups = std::to_string(tl.unit_groups);
  int extra_scratch = 0;
  if (lo.swiglu()) {
    out.call = "task_linear_swiglu" + DescBuilder::targs({K, rows, B, ystride, tl.box_rows, tl.boxes},
                                                         ", " + x_type + ", " + eps + ", " + unit_groups);
    if (B == 1) extra_scratch = static_cast<int>(2 * 2 * B * tl.box_rows * 4);
  } else {
    int64_t np = 0;  // an lm_head fused with its argmax: its partial slot
    if (lo.tokens >= 0) {
      const Region& vr = b.first_of_dtype(t, task.writes, DType::kF32, "argmax_val", lo.y);
      const Region& ir = b.first_of_dtype(t, task.writes, DType::kI32, "argmax_idx");
      np = b.tensor(vr.tensor).shape[1];
      b.reloc(t, Slot::kArgmaxVal, vr.tensor, vr.dims[1].lo);
      b.reloc(t, Slot::kArgmaxIdx, ir.tensor, ir.dims[1].lo);
      if (B == 1) extra_scratch = 2 * b.warps * 4;
    }
    out.call = "task_linear" + DescBuilder::targs({K, rows, B, ystride},
                                                  std::string(f32 ? ", true, " : ", false, ") +
                                                      std::to_string(tl.box_rows) + ", " + std::to_string(tl.boxes) +
                                                      ", " + x_type + (residual ? ", true, " : ", false, ") + eps +
                                                      ", " + std::to_string(np) + ", " + unit_groups +
                                                      (lo.bias >= 0 ? ", true" : ""));
  }
  b.scratch(linear_scratch(b, K, norm, tl.boxes, tl.box_rows * (lo.swiglu() ? 2 : 1)) + extra_scratch);
}

namespace {

// A linear task that may join a group: its K, x, rows.
struct LinearGroupShape {
  int64_t K = 0, rows = 0, ystride = 0;
  TensorId x = -1, norm = -1;
  int32_t eps_bits = 0;
  bool bias = false;  // all members of a group have a bias, or none
  bool same_input(const LinearGroupShape& o) const {
    return x == o.x && K == o.K && norm == o.norm && eps_bits == o.eps_bits && bias == o.bias;
  }
};

std::optional<LinearGroupShape> linear_groupable(const DescBuilder& b, TaskId t) {
  const Task& task = b.task(t);
  if (task.kind != TaskKind::kLinear) return std::nullopt;
  const Operator& op = b.op_of(t);
  const LinearForm lo = linear_form(op);
  if (lo.weight < 0 || lo.residual >= 0 || lo.swiglu() || coop_share(task).cooperative())
    return std::nullopt;  // their epilogues run alone; shares claim units
  const Tensor& y = b.tensor(op.outputs.at(0));
  if (y.dtype != DType::kBF16) return std::nullopt;
  for (const Region& r : task.reads)
    if (r.tensor == lo.weight)
      return LinearGroupShape{b.tensor(lo.weight).shape[1], r.dims[0].size(), y.shape[1], lo.x, lo.norm,
                              norm_eps_bits(op), lo.bias >= 0};
  return std::nullopt;
}

}  // namespace

int64_t linear_group_rows(const DescBuilder& b, TaskId t) {
  const std::optional<LinearGroupShape> s = linear_groupable(b, t);
  return s ? s->rows : 0;
}

bool linear_same_group_input(const DescBuilder& b, TaskId t, TaskId n) {
  const std::optional<LinearGroupShape> lead = linear_groupable(b, t), next = linear_groupable(b, n);
  return lead && next && next->same_input(*lead);
}

// The members' own descriptors stay in the table for per-op mode. Member m's output goes
// to pointer slot group_y(m), its bias to group_bias(m).
void add_linear_group(DescBuilder& b, const std::vector<TaskId>& members, int32_t index) {
  Megakernel& k = b.out;
  abi::TaskDesc d = k.tasks.at(members[0]);
  const LinearGroupShape lead = *linear_groupable(b, members[0]);
  const int64_t K = lead.K;
  int64_t pad_rows = 0;
  std::string shapes;
  for (size_t i = 0; i < static_cast<size_t>(Slot::kMaxGroupMembers); ++i) {
    const LinearGroupShape sh = i < members.size() ? *linear_groupable(b, members[i]) : LinearGroupShape{};
    pad_rows += (sh.rows + 7) / 8 * 8;
    shapes += ", " + std::to_string(sh.rows) + ", " + std::to_string(sh.ystride);
    if (i > 0 && i < members.size()) d.member[i - 1] = members[i];
  }
  const int64_t boxes = chunk_boxes(b, pad_rows, K, pad_rows * K * 2, lead.norm >= 0);
  const int64_t col_chunks = (K / 64 + boxes - 1) / boxes;
  b.scratch(linear_scratch(b, K, lead.norm >= 0, boxes, pad_rows));
  StreamShape st = k.stream.at(members[0]);
  st.groups = 1;
  st.col_chunks = static_cast<int32_t>(col_chunks);
  st.boxes = static_cast<int32_t>(boxes);
  st.boxes_last = static_cast<int32_t>(K / 64 - (col_chunks - 1) * boxes);
  st.members = members;
  d.members = static_cast<int32_t>(members.size());
  d.inst = b.instantiate("task_linear_group<" + std::to_string(K) + ", " + std::to_string(b.rows) + ", " +
                         std::to_string(boxes) + (x_f32(b, K) ? ", true, " : ", false, ") +
                         std::to_string(lead.eps_bits) + shapes + (lead.bias ? ", true" : "") + ">(d, c)");
  k.tasks.push_back(d);
  k.stream.push_back(std::move(st));
  // The leader's pointers, then each member's output (and bias) in its group slots.
  for (size_t r = 0, n = k.relocations.size(); r < n; ++r)
    for (size_t m = 0; m < members.size(); ++m) {
      const int32_t slot = k.relocations[r].slot;
      if (k.relocations[r].task != members[m] || (m > 0 && slot != Slot::kY.index && slot != Slot::kBias.index))
        continue;
      Relocation copy = k.relocations[r];
      copy.task = index;
      if (slot == Slot::kY.index) copy.slot = Slot::group_y(static_cast<int>(m)).index;
      if (slot == Slot::kBias.index) copy.slot = Slot::group_bias(static_cast<int>(m)).index;
      k.relocations.push_back(copy);
    }
}

}  // namespace mpk::codegen
