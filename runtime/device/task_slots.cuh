// What each task kind keeps in a descriptor's pointer slots (TaskDesc::ptr) and integer
// slots (TaskDesc::arg), by name. codegen/ writes a descriptor through these names
// (relocations name a PtrSlot, integers an ArgSlot) and the device bodies read it
// through the same names (dptr / arg_int / arg_float in runtime/device/common.cuh take
// nothing else), so the two sides cannot disagree on a number: renaming or moving a slot
// changes both, a slot that one side lacks does not compile, and a pointer slot cannot
// stand for an integer one. Compiled by g++ and nvcc (abi.cuh). The slots of one kind
// are distinct and in range (asserted below).
#pragma once

#include "runtime/device/abi.cuh"

namespace mpk {
namespace abi {

struct PtrSlot {
  int32_t index;
};
struct ArgSlot {
  int32_t index;
};

namespace slots {

// embedding: the table's rows from column c0 (rows of H), the tokens, y + c0 (rows of H).
struct Embedding {
  static constexpr PtrSlot kTable{0}, kTokens{1}, kY{2};
  static constexpr ArgSlot kVocab{0};  // rows of the table (a token is clamped to them)
};

// rms_norm (whole rows) and qk_norm (whole heads from column a): x + a, the norm weight,
// y + a.
struct Norm {
  static constexpr PtrSlot kX{0}, kW{1}, kY{2};
  static constexpr ArgSlot kEps{0};  // f32 bits
};

// rope: x + a, y + a (whole heads), this RoPE's (cos, sin) table [S][head_dim / 2].
struct Rope {
  static constexpr PtrSlot kX{0}, kY{1}, kTable{2};
};

// kv_append (also a fused attention's): k + h*hd and v + h*hd, the caches offset to kv
// head h; when it ropes k the RoPE table, and with a k norm its weight.
struct KvAppend {
  static constexpr PtrSlot kK{0}, kV{1}, kKCache{2}, kVCache{3}, kRopeTable{4}, kKNorm{5};
};

// linear and lm_head: x (whole rows), y + n0; with a residual, residual + n0; with a
// norm, its weight; an lm_head with its argmax, its partial slots (val, idx); with a
// bias, bias + n0. A linear group (adjacent linears over the same x, run as one) keeps x
// and the norm weight and puts member m's y at group_y(m) (group_y(0) == kY) and its
// bias at group_bias(m) (group_bias(0) == kBias).
struct Linear {
  static constexpr PtrSlot kX{0}, kY{1}, kResidual{2}, kNorm{3}, kArgmaxVal{4}, kArgmaxIdx{5}, kBias{6};
  static constexpr ArgSlot kRow0{0};  // n0: the first output row (the vocabulary index of an lm_head's row 0)
  static constexpr int kMaxGroupMembers = 4;
  static MPK_HD constexpr PtrSlot group_y(int m) { return PtrSlot{m < 2 ? m + 1 : m + 2}; }
  static MPK_HD constexpr PtrSlot group_bias(int m) { return PtrSlot{6 + m}; }
};

// attention and attention_partial: q + j0*hd (rows of nq*hd), the caches offset to kv
// head h, y + j0*hd (attention) or the partial record of (h, split) (attention_partial).
// A fused attention also reads raw k and v of its kv head, the RoPE table and, with q/k
// norms, their weights.
struct Attention {
  static constexpr PtrSlot kQ{0}, kKCache{1}, kVCache{2}, kOut{3}, kK{4}, kV{5}, kRopeTable{6}, kQNorm{7},
      kKNorm{8};
  static constexpr ArgSlot kScale{0};  // f32 bits
  // The chunk row of the task's first row (docs/ir.md "Prefill chunks"; positions.cuh), its
  // pointers offset to that row and to its sequence's caches: 0 in a decode module.
  static constexpr ArgSlot kChunkRow0{3};
  // attention_partial: its split's index; its positions follow the step (positions.cuh,
  // attention_split).
  static constexpr ArgSlot kSplit{4};
};

// attention_merge: the partial records of kv head h, y + h*G*hd.
struct AttentionMerge {
  static constexpr PtrSlot kPart{0}, kY{1};
};

// silu_mul and residual_add: a + c0, b + c0, y + c0.
struct Binary {
  static constexpr PtrSlot kA{0}, kB{1}, kY{2};
};

// argmax_partial: logits + v0, its partial slot of val and of idx.
struct ArgmaxPartial {
  static constexpr PtrSlot kLogits{0}, kVal{1}, kIdx{2};
  static constexpr ArgSlot kFirstRow{0};  // v0
};

// argmax_reduce: the partials val and idx [B, P], the tokens.
struct ArgmaxReduce {
  static constexpr PtrSlot kVal{0}, kIdx{1}, kTokens{2};
};

// Slots of one kind: each in range, no two alike.
template <int N>
constexpr bool distinct(const int32_t (&s)[N], int limit) {
  for (int i = 0; i < N; ++i) {
    if (s[i] < 0 || s[i] >= limit) return false;
    for (int j = 0; j < i; ++j)
      if (s[i] == s[j]) return false;
  }
  return true;
}

static_assert(distinct({Embedding::kTable.index, Embedding::kTokens.index, Embedding::kY.index}, kPtrSlots) &&
                  distinct({Embedding::kVocab.index}, kArgSlots),
              "embedding slots");
static_assert(distinct({Norm::kX.index, Norm::kW.index, Norm::kY.index}, kPtrSlots) &&
                  distinct({Norm::kEps.index}, kArgSlots),
              "norm slots");
static_assert(distinct({Rope::kX.index, Rope::kY.index, Rope::kTable.index}, kPtrSlots), "rope slots");
static_assert(distinct({KvAppend::kK.index, KvAppend::kV.index, KvAppend::kKCache.index, KvAppend::kVCache.index,
                        KvAppend::kRopeTable.index, KvAppend::kKNorm.index},
                       kPtrSlots),
              "kv_append slots");
static_assert(distinct({Linear::kX.index, Linear::kY.index, Linear::kResidual.index, Linear::kNorm.index,
                        Linear::kArgmaxVal.index, Linear::kArgmaxIdx.index, Linear::kBias.index},
                       kPtrSlots) &&
                  distinct({Linear::kRow0.index}, kArgSlots),
              "linear slots");
static_assert(Linear::group_y(0).index == Linear::kY.index && Linear::group_bias(0).index == Linear::kBias.index &&
                  distinct({Linear::kX.index, Linear::kNorm.index, Linear::group_y(0).index, Linear::group_y(1).index,
                            Linear::group_y(2).index, Linear::group_y(3).index, Linear::group_bias(0).index,
                            Linear::group_bias(1).index, Linear::group_bias(2).index, Linear::group_bias(3).index},
                           kPtrSlots),
              "linear group slots");
static_assert(distinct({Attention::kQ.index, Attention::kKCache.index, Attention::kVCache.index, Attention::kOut.index,
                        Attention::kK.index, Attention::kV.index, Attention::kRopeTable.index,
                        Attention::kQNorm.index, Attention::kKNorm.index},
                       kPtrSlots) &&
                  distinct({Attention::kScale.index, Attention::kChunkRow0.index, Attention::kSplit.index}, kArgSlots),
              "attention slots");
static_assert(distinct({AttentionMerge::kPart.index, AttentionMerge::kY.index}, kPtrSlots), "attention_merge slots");
static_assert(distinct({Binary::kA.index, Binary::kB.index, Binary::kY.index}, kPtrSlots), "binary slots");
static_assert(distinct({ArgmaxPartial::kLogits.index, ArgmaxPartial::kVal.index, ArgmaxPartial::kIdx.index},
                       kPtrSlots) &&
                  distinct({ArgmaxPartial::kFirstRow.index}, kArgSlots),
              "argmax_partial slots");
static_assert(distinct({ArgmaxReduce::kVal.index, ArgmaxReduce::kIdx.index, ArgmaxReduce::kTokens.index}, kPtrSlots),
              "argmax_reduce slots");

}  // namespace slots
}  // namespace abi
}  // namespace mpk
