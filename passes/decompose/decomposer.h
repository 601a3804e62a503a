// The `decompose` pass's part of an operator family (ir/kinds.def): for every family a
// file passes/decompose/<family>.cc defines
//   void decompose_<family>(Decomposer& d, const Operator& op)
// in namespace mpk::decompose, which turns one operator of the family into tasks with
// the read and write regions of docs/ir.md ("Tasks") and their bytes and flops (the
// cost the policies and the simulator plan with). The pass (passes/decompose.cc)
// reaches them through the kinds table, so a family without one does not link. The
// operator has passed the one signature check (op_signature_problem) before.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/module.h"

namespace mpk::decompose {

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
  std::optional<int64_t> attention_rows;
  std::optional<int64_t> argmax_tile;
  Coop coop = Coop::kAuto;
  std::optional<int64_t> coop_unit;
};

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
inline int64_t round_up(int64_t a, int64_t m) { return ceil_div(a, m) * m; }

// The argmax partials of `parts` vocabulary tiles: f32 values and i32 indices [B, P]
// (of an argmax, or an lm_head fused with its argmax).
struct ArgmaxScratch {
  TensorId val = -1, idx = -1;
  int64_t parts = 0;
};

class Decomposer {
 public:
  Decomposer(Module& m, const DecomposeOptions& o)
      : m_(m), p_(m.program), o_(o), sms_(std::max<int64_t>(1, m.machine.sm_count)) {}

  // Every operator in program order (the graph is replaced).
  void run();

  const Program& program() const { return p_; }
  const DecomposeOptions& options() const { return o_; }
  int64_t sms() const { return sms_; }
  OpId current_op() const { return op_; }
  const std::vector<int64_t>& shape(TensorId t) const { return p_.tensor(t).shape; }
  int64_t esize(TensorId t) const { return size_of(p_.tensor(t).dtype); }

  static Region reg(TensorId t, std::vector<Range> dims) { return Region{t, std::move(dims)}; }
  int64_t region_bytes(const Region& r) const { return r.volume() * esize(r.tensor); }
  int64_t regions_bytes(const std::vector<Region>& rs) const;

  // A task of the current operator; bytes: reads + writes of its regions unless given.
  void task(TaskKind kind, std::vector<Region> reads, std::vector<Region> writes, int64_t flops, int64_t bytes = -1,
            Attrs attrs = {});
  // A scratch tensor of the current operator (an earlier decompose's are dropped first).
  TensorId add_scratch(const Operator& op, const std::string& name, DType dt, std::vector<int64_t> shape);
  [[noreturn]] void bad(const Operator& op, const std::string& what) const;

  // Calls f(lo, hi) for [0, n) cut into tiles of `tile` (the last one may be smaller).
  template <typename F>
  static void tiles(int64_t n, int64_t tile, F&& f) {
    for (int64_t lo = 0; lo < n; lo += tile) f(lo, std::min(n, lo + tile));
  }
  // Columns per embedding / silu_mul / residual_add task (option or auto).
  int64_t elementwise_tile(int64_t cols) const;

  // The argmax family's partials and reduce, which an lm_head with argmax uses too
  // (passes/decompose/argmax.cc).
  ArgmaxScratch argmax_scratch(const Operator& op, int64_t batch, int64_t parts);
  void argmax_reduce(const ArgmaxScratch& am, int64_t batch, TensorId tokens);

 private:
  void emit(const Operator& op);

  Module& m_;
  Program& p_;
  const DecomposeOptions o_;
  const int64_t sms_;
  OpId op_ = -1;
};

#define MPK_OP_KIND(Name, name, family, proto, rgb) void decompose_##family(Decomposer& d, const Operator& op);
#include "ir/kinds.def"

}  // namespace mpk::decompose
