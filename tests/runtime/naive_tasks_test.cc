// The partial task kinds of the CPU task kernels (run_task) against the naive f64
// definitions of docs/ir.md (naive_f64.h): attention_partial's (o, m, l) records and
// attention_merge, plain and fused (both flavours); argmax_partial / argmax_reduce, the
// argmax partials of lm_head tiles and of cooperative lm_head shares, exactly. Tolerance:
// naive_bench.h.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ir/row_positions.h"
#include "tests/runtime/naive_bench.h"

namespace mpk {
namespace {

using test::agrees;
using test::Agreement;
using test::NaiveBench;
using test::R;
using A = TensorRole;

constexpr int64_t kB = 2, kNq = 4, kNkv = 2, kHd = 16, kSeq = 8, kG = kNq / kNkv, kRec = kHd + 2;

// An attention (fused in the llama or qwen3 flavour, or plain) decomposed into `splits`
// partials per kv head and one merge per kv head (fused: after one kv_append per kv head).
struct SplitAttention {
  NaiveBench nb;
  TensorId q, k = -1, v = -1, kc, vc, qnw = -1, knw = -1, y, part;
  enum Flavour { kPlain, kLlama, kQwen3 } flavour;
  Attrs attrs;

  SplitAttention(Flavour f, int64_t splits) : flavour(f) {
    const bool fused = f != kPlain;
    q = nb.tensor("q", DType::kBF16, {kB, kNq * kHd}, A::kActivation);
    if (fused) {
      k = nb.tensor("k", DType::kBF16, {kB, kNkv * kHd}, A::kActivation);
      v = nb.tensor("v", DType::kBF16, {kB, kNkv * kHd}, A::kActivation);
    }
    kc = nb.tensor("kc", DType::kBF16, {kB, kSeq, kNkv, kHd}, A::kKvCache);
    vc = nb.tensor("vc", DType::kBF16, {kB, kSeq, kNkv, kHd}, A::kKvCache);
    if (f == kQwen3) {
      qnw = nb.weight("qnw", {kHd}, DType::kBF16, 0.5, 1.5);
      knw = nb.weight("knw", {kHd}, DType::kBF16, 0.5, 1.5);
    }
    y = nb.tensor("y", DType::kBF16, {kB, kNq * kHd}, A::kActivation);
    attrs = {{"num_q_heads", kNq}, {"num_kv_heads", kNkv}, {"head_dim", kHd}, {"scale", 0.25}};
    if (f == kLlama)
      attrs.insert({{"theta", 500000.0}, {"rope_type", std::string("llama3")}, {"factor", 32.0},
                    {"low_freq_factor", 1.0}, {"high_freq_factor", 4.0},
                    {"original_max_position_embeddings", int64_t{64}}});
    if (f == kQwen3) attrs.insert({{"theta", 1e6}, {"rope_type", std::string("default")}, {"eps", 1e-6}});
    std::vector<TensorId> in = fused ? std::vector<TensorId>{q, k, v, kc, vc} : std::vector<TensorId>{q, kc, vc};
    if (f == kQwen3) in.insert(in.end(), {qnw, knw});
    nb.op(OpKind::kAttention, in, fused ? std::vector<TensorId>{y, kc, vc} : std::vector<TensorId>{y}, attrs);
    part = nb.tensor("part", DType::kF32, {kB, kNq, splits, kRec}, A::kScratch);
    for (int64_t h = 0; h < kNkv && fused; ++h) {
      std::vector<Region> reads = {R(k, {{0, kB}, {h * kHd, (h + 1) * kHd}}), R(v, {{0, kB}, {h * kHd, (h + 1) * kHd}})};
      if (knw >= 0) reads.push_back(R(knw, {{0, kHd}}));
      nb.task(TaskKind::kKvAppend, reads, {cache_rows(kc, h, {0, kSeq}), cache_rows(vc, h, {0, kSeq})});
    }
    for (int64_t h = 0; h < kNkv; ++h)
      for (int64_t s = 0; s < splits; ++s) {
        std::vector<Region> reads = {R(q, {{0, kB}, {h * kG * kHd, (h + 1) * kG * kHd}})};
        if (qnw >= 0) reads.push_back(R(qnw, {{0, kHd}}));
        reads.insert(reads.end(), {cache_rows(kc, h, {0, kSeq}), cache_rows(vc, h, {0, kSeq})});  // splits follow the step
        nb.task(TaskKind::kAttentionPartial, reads, {R(part, {{0, kB}, {h * kG, (h + 1) * kG}, {s, s + 1}, {0, kRec}})});
      }
    for (int64_t h = 0; h < kNkv; ++h)
      nb.task(TaskKind::kAttentionMerge, {R(part, {{0, kB}, {h * kG, (h + 1) * kG}, {0, splits}, {0, kRec}})},
              {R(y, {{0, kB}, {h * kG * kHd, (h + 1) * kG * kHd}})});
  }

  static Region cache_rows(TensorId cache, int64_t h, Range positions) {
    return R(cache, {{0, kB}, positions, {h, h + 1}, {0, kHd}});
  }

  // Query head j of row b as the attention uses it (naive side).
  std::vector<double> query(int64_t b, int64_t j, int64_t pos) {
    const std::vector<double>& qv = nb.naive().at(q).v;
    std::vector<double> head(qv.begin() + b * kNq * kHd + j * kHd, qv.begin() + b * kNq * kHd + (j + 1) * kHd);
    if (flavour == kPlain) return head;
    const std::vector<double> inv = naive::rope_inverse_frequencies(attrs);
    const double* norm = qnw >= 0 ? nb.naive().at(qnw).v.data() : nullptr;
    head = naive::prepare_head(head, norm, flavour == kQwen3 ? 1e-6 : 0, &inv, pos);
    for (double& e : head) e = naive::round_to(DType::kBF16, e);
    return head;
  }
};

// The CPU's partial records, the caches and the merged output against the naive side.
void check_split_attention(SplitAttention::Flavour flavour, int64_t splits, int64_t pos) {
  SplitAttention a(flavour, splits);
  a.nb.start();
  a.nb.run_tasks(pos);
  a.nb.naive().run_op(0, pos, {1});  // whole operator: appends (when fused) and attends
  const std::string what = "flavour " + std::to_string(flavour) + ", " + std::to_string(splits) + " splits, pos " +
                           std::to_string(pos);
  EXPECT_TRUE(agrees(a.nb.cpu(a.kc), a.nb.naive().at(a.kc).v, Agreement::kRounded)) << what << ": k cache";
  EXPECT_TRUE(agrees(a.nb.cpu(a.vc), a.nb.naive().at(a.vc).v, Agreement::kExact)) << what << ": v cache";
  EXPECT_TRUE(agrees(a.nb.cpu(a.y), a.nb.naive().at(a.y).v, Agreement::kRounded)) << what << ": y";
  const std::vector<double> part = a.nb.cpu(a.part);
  std::vector<double> merged_from_cpu_parts;
  for (int64_t b = 0; b < kB; ++b)
    for (int64_t j = 0; j < kNq; ++j) {
      std::vector<naive::AttentionPartial> cpu_parts;
      for (int64_t s = 0; s < splits; ++s) {
        const auto [s0, s1] = RowPositions{pos}.attention_split(s, splits, kSeq);
        const naive::AttentionPartial want = naive::attend(a.query(b, j, pos), a.nb.naive().at(a.kc), a.nb.naive().at(a.vc),
                                                           b, j / kG, s0, s1, pos, 0.25);
        const double* rec = &part[((b * kNq + j) * splits + s) * kRec];
        const std::vector<double> got(rec, rec + kRec);
        std::vector<double> expected = want.o;
        expected.insert(expected.end(), {want.m, want.l});
        const bool empty = want.l == 0;  // exactly (0, -inf, 0)
        EXPECT_TRUE(agrees(got, expected, empty ? Agreement::kExact : Agreement::kClose)) << what << ": partial (b " << b << ", head " << j << ", split " << s << ")";
        cpu_parts.push_back({std::vector<double>(rec, rec + kHd), rec[kHd], rec[kHd + 1]});
      }
      for (double e : naive::merge(cpu_parts)) merged_from_cpu_parts.push_back(naive::round_to(DType::kBF16, e));
    }
  // The merge alone: the CPU's y against the naive merge of the CPU's own partials.
  EXPECT_TRUE(agrees(a.nb.cpu(a.y), merged_from_cpu_parts, Agreement::kRounded)) << what << ": merge";
}

TEST(NaiveTasks, AttentionPartialsAndMerge) {
  for (auto flavour : {SplitAttention::kPlain, SplitAttention::kLlama, SplitAttention::kQwen3})
    for (int64_t splits : {2, 3, 8})
      for (int64_t pos : {0, 2, 5, 7}) check_split_attention(flavour, splits, pos);
}

// One argmax partial slot of the CPU, exactly as the naive side computes it from the
// same logits.
void expect_slot(NaiveBench& nb, TensorId val, TensorId idx, int64_t b, int64_t slot, naive::ArgmaxPartial want,
                 const std::string& what) {
  const int64_t parts = nb.module().program.tensors[val].shape[1];
  const double v = nb.cpu(val)[b * parts + slot];
  EXPECT_TRUE(v == want.value) << what << ": row " << b << " slot " << slot << " value " << v << " vs " << want.value;
  EXPECT_EQ(nb.cpu(idx)[b * parts + slot], want.index) << what << ": row " << b << " slot " << slot;
}

TEST(NaiveTasks, ArgmaxPartialsAndReduceAreExact) {
  const double inf = std::numeric_limits<double>::infinity();
  for (int64_t tile : {90, 16, 7, 1}) {
    NaiveBench nb;
    const TensorId logits = nb.tensor("logits", DType::kF32, {3, 90}, A::kOutput);
    const TensorId tok = nb.tensor("tokens", DType::kI32, {3}, A::kInput);
    nb.op(OpKind::kArgmax, {logits}, {tok});
    const int64_t parts = (90 + tile - 1) / tile;
    const TensorId val = nb.tensor("argmax_val", DType::kF32, {3, parts}, A::kScratch);
    const TensorId idx = nb.tensor("argmax_idx", DType::kI32, {3, parts}, A::kScratch);
    for (int64_t p = 0; p < parts; ++p)
      nb.task(TaskKind::kArgmaxPartial, {R(logits, {{0, 3}, {p * tile, std::min<int64_t>(90, (p + 1) * tile)}})},
              {R(val, {{0, 3}, {p, p + 1}}), R(idx, {{0, 3}, {p, p + 1}})});
    nb.task(TaskKind::kArgmaxReduce, {R(val, {{0, 3}, {0, parts}}), R(idx, {{0, 3}, {0, parts}})}, {R(tok, {{0, 3}})});
    nb.start();
    // Row 0: ties across tiles at 20 and 61; row 1: NaN and -inf in the first 30; row 2 random.
    for (int64_t i : {20, 61}) nb.set(logits, i, 9);
    for (int64_t i = 0; i < 30; ++i) nb.set(logits, 90 + i, i % 2 ? std::nan("") : -inf);
    nb.run_tasks(0);
    const std::vector<double>& lv = nb.naive().at(logits).v;
    for (int64_t b = 0; b < 3; ++b) {
      std::vector<naive::ArgmaxPartial> partials;
      for (int64_t p = 0; p < parts; ++p) {
        partials.push_back(naive::argmax_range(&lv[b * 90], p * tile, std::min<int64_t>(90, (p + 1) * tile)));
        expect_slot(nb, val, idx, b, p, partials.back(), "tile " + std::to_string(tile));
      }
      EXPECT_EQ(nb.cpu(tok)[b], naive::argmax_reduce(partials).index) << "tile " << tile << " row " << b;
      EXPECT_EQ(nb.cpu(tok)[b], naive::argmax_range(&lv[b * 90], 0, 90).index) << "tile " << tile << " row " << b;
    }
    EXPECT_EQ(nb.cpu(tok)[0], 20);
  }
}

// An lm_head with a norm and an argmax, as `tiles` tiles (shares == 0) or as `shares`
// cooperative shares of `unit` rows: logits against the naive operator, each partial slot
// exactly against the naive argmax of the CPU's logits over what its task computed.
void check_lm_head_partials(int64_t tiles, int64_t shares, int64_t unit) {
  constexpr int64_t kV = 90, kK = 64;
  NaiveBench nb;
  const TensorId x = nb.tensor("x", DType::kBF16, {3, kK}, A::kActivation);
  const TensorId w = nb.weight("w", {kV, kK}, DType::kBF16);
  const TensorId nw = nb.weight("nw", {kK}, DType::kBF16, 0.5, 1.5);
  const TensorId logits = nb.tensor("logits", DType::kF32, {3, kV}, A::kOutput);
  const TensorId tok = nb.tensor("tokens", DType::kI32, {3}, A::kInput);
  nb.op(OpKind::kLmHead, {x, w, nw}, {logits, tok}, {{"eps", 1e-5}});
  const int64_t parts = shares > 0 ? shares : tiles, tile = (kV + tiles - 1) / std::max<int64_t>(tiles, 1);
  const TensorId val = nb.tensor("argmax_val", DType::kF32, {3, parts}, A::kScratch);
  const TensorId idx = nb.tensor("argmax_idx", DType::kI32, {3, parts}, A::kScratch);
  std::vector<std::vector<std::pair<int64_t, int64_t>>> ranges(parts);  // vocab rows of each slot
  for (int64_t p = 0; p < parts; ++p) {
    if (shares == 0) ranges[p] = {{p * tile, std::min(kV, (p + 1) * tile)}};
    for (int64_t u = p; shares > 0 && u * unit < kV; u += shares) ranges[p].emplace_back(u * unit, std::min(kV, (u + 1) * unit));
    const Range rows = shares > 0 ? Range{0, kV} : Range{ranges[p][0].first, ranges[p][0].second};
    nb.task(TaskKind::kLmHead, {R(x, {{0, 3}, {0, kK}}), R(w, {rows, {0, kK}}), R(nw, {{0, kK}})},
            {R(logits, {{0, 3}, rows}), R(val, {{0, 3}, {p, p + 1}}), R(idx, {{0, 3}, {p, p + 1}})});
    if (shares > 0) nb.module().graph.tasks.back().attrs = {{"share", p}, {"shares", shares}, {"unit_rows", unit}};
  }
  nb.task(TaskKind::kArgmaxReduce, {R(val, {{0, 3}, {0, parts}}), R(idx, {{0, 3}, {0, parts}})}, {R(tok, {{0, 3}})});
  nb.start();
  nb.run_tasks(0);
  nb.naive().run_op(0, 0, {1});
  const std::string what = shares > 0 ? std::to_string(shares) + " shares of units of " + std::to_string(unit)
                                      : std::to_string(tiles) + " tiles";
  EXPECT_TRUE(agrees(nb.cpu(logits), nb.naive().at(logits).v, Agreement::kClose)) << what;
  const std::vector<double> cpu_logits = nb.cpu(logits);
  for (int64_t b = 0; b < 3; ++b) {
    for (int64_t p = 0; p < parts; ++p) {
      std::vector<naive::ArgmaxPartial> units = {{-std::numeric_limits<double>::infinity(), shares > 0 ? 0 : ranges[p][0].first}};
      for (auto [v0, v1] : ranges[p]) units.push_back(naive::argmax_range(&cpu_logits[b * kV], v0, v1));
      expect_slot(nb, val, idx, b, p, naive::argmax_reduce(units), what);
    }
    EXPECT_EQ(nb.cpu(tok)[b], naive::argmax_range(&cpu_logits[b * kV], 0, kV).index) << what << " row " << b;
  }
}

TEST(NaiveTasks, LmHeadArgmaxPartialsOfTilesAndCooperativeShares) {
  for (int64_t tiles : {1, 4, 13}) check_lm_head_partials(tiles, 0, 0);
  // 90 rows in units of 16: 6 units; with 8 shares, shares 6 and 7 compute none.
  for (auto [shares, unit] : {std::pair{4, 16}, {8, 16}, {3, 8}}) check_lm_head_partials(0, shares, unit);
}

}  // namespace
}  // namespace mpk
