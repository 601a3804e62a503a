// The `decompose` pass: turns every operator of the Program into tasks with the read
// and write regions of docs/ir.md ("Tasks made by decompose"), with bytes and flops
// estimates, in program order. Each operator family's rule is its file
// passes/decompose/<family>.cc (decomposer.h), reached through the kinds table. Tile
// sizes default to values computed from the machine model so that large operators
// spread over all SMs; options override them.
#include <algorithm>
#include <optional>
#include <string>

#include "ir/error.h"
#include "ir/verifier.h"
#include "passes/decompose/decomposer.h"
#include "passes/options.h"

namespace mpk {
namespace decompose {
namespace {

constexpr const char* kPass = "decompose";

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

}  // namespace

void Decomposer::run() {
  m_.graph = TaskGraph{};
  drop_old_scratch(p_);
  p_.rebuild_use_lists();
  const size_t num_ops = p_.ops.size();
  for (size_t i = 0; i < num_ops; ++i) {
    op_ = static_cast<OpId>(i);
    emit(p_.ops[i]);
  }
  p_.rebuild_use_lists();
}

// The one signature check, then the operator's family (ir/kinds.def).
void Decomposer::emit(const Operator& op) {
  if (const std::string problem = op_signature_problem(p_, op); !problem.empty()) bad(op, problem);
  switch (op.kind) {
#define MPK_OP_KIND(Name, name, family, proto, rgb) \
  case OpKind::k##Name:                             \
    return decompose_##family(*this, op);
#include "ir/kinds.def"
  }
}

void Decomposer::bad(const Operator& op, const std::string& what) const {
  throw Error("operator '" + op.name + "' (" + std::string(name_of(op.kind)) + "): " + what);
}

int64_t Decomposer::regions_bytes(const std::vector<Region>& rs) const {
  int64_t n = 0;
  for (const Region& r : rs) n += region_bytes(r);
  return n;
}

void Decomposer::task(TaskKind kind, std::vector<Region> reads, std::vector<Region> writes, int64_t flops,
                      int64_t bytes, Attrs attrs) {
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

TensorId Decomposer::add_scratch(const Operator& op, const std::string& name, DType dt, std::vector<int64_t> shape) {
  if (p_.find_tensor(name) >= 0) bad(op, "scratch tensor name '" + name + "' is already taken");
  return p_.add_tensor(Tensor{name, dt, std::move(shape), TensorRole::kScratch});
}

// Auto tile rule (docs/passes.md): about one tile per SM, rounded up to a multiple of
// 64, at least 256.
int64_t Decomposer::elementwise_tile(int64_t cols) const {
  return o_.elementwise_tile.value_or(std::max<int64_t>(256, round_up(ceil_div(cols, sms_), 64)));
}

namespace {

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
                   "auto: 1 when S <= 512, else min(ceil(S / 128), max(1, sm_count / "
                   "(2 num_kv_heads)))",
                   1)
          .integer("attention-heads", &O::attention_heads,
                   "query heads per attention task with one split (a divisor of the query heads "
                   "per kv head; fewer than all: a fused attention's kv heads are appended by "
                   "kv_append tasks after them); auto: the most, dividing the group, with heads x "
                   "head_dim <= 128, where num_q_heads / heads <= sm_count, else all",
                   1)
          .integer("attention-rows", &O::attention_rows,
                   "batch rows per attention task (and kv_append, partial and merge task); auto: "
                   "the fewest for which the attention tasks of all rows still fit on sm_count SMs",
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

MPK_PASS(decompose_pass_info);

}  // namespace
}  // namespace decompose
}  // namespace mpk
