// Per-task kernels of the fused forms against their whole operators, bit for bit, under
// tilings decompose does not produce (row splits, several heads per task, uneven tiles):
// a swiglu linear, an lm_head with a norm and an argmax, and a fused attention (normed
// and roped, one split and several).
#include <gtest/gtest.h>

#include "tests/runtime/op_bench.h"

namespace mpk {
namespace {

using test::kB;
using test::OpBench;
using test::R;

TEST(FusedKernels, SwigluLinear) {
  for (bool norm : {false, true})
    for (auto [rt, nt] : {std::pair{3, 37}, {1, 8}, {2, 5}, {3, 16}}) {
      OpBench o;
      const TensorId x = o.tensor("x", DType::kBF16, {kB, 70}, TensorRole::kActivation);
      const TensorId wg = o.weight("wg", {37, 70}, DType::kBF16);
      const TensorId wu = o.weight("wu", {37, 70}, DType::kF32);
      const TensorId nw = o.weight("nw", {70}, DType::kBF16, 0.5f, 1.5f);
      const TensorId y = o.tensor("act", DType::kBF16, {kB, 37}, TensorRole::kActivation);
      Attrs attrs = {{"activation", std::string("swiglu")}};
      std::vector<TensorId> in = {x, wg, wu};
      if (norm) in.push_back(nw), attrs["eps"] = 1e-5;
      o.op(OpKind::kLinear, in, {y}, attrs);
      for (int64_t b = 0; b < kB; b += rt)
        for (int64_t n = 0; n < 37; n += nt) {
          const Range rows{b, std::min<int64_t>(b + rt, kB)}, ns{n, std::min<int64_t>(n + nt, 37)};
          std::vector<Region> reads = {R(x, {rows, {0, 70}}), R(wg, {ns, {0, 70}}), R(wu, {ns, {0, 70}})};
          if (norm) reads.push_back(R(nw, {{0, 70}}));
          o.task(TaskKind::kLinear, reads, {R(y, {rows, ns})});
        }
      o.expect_match(0);
    }
}

TEST(FusedKernels, LmHeadWithNormAndArgmax) {
  for (int64_t vt : {90, 16, 7}) {
    OpBench o;
    const TensorId x = o.tensor("x", DType::kBF16, {kB, 64}, TensorRole::kActivation);
    const TensorId w = o.weight("w", {90, 64}, DType::kBF16);
    const TensorId nw = o.weight("nw", {64}, DType::kBF16, 0.5f, 1.5f);
    const TensorId logits = o.tensor("logits", DType::kF32, {kB, 90}, TensorRole::kOutput);
    const TensorId tok = o.tensor("tokens", DType::kI32, {kB}, TensorRole::kInput);
    o.op(OpKind::kLmHead, {x, w, nw}, {logits, tok}, {{"eps", 1e-5}});
    const int64_t parts = (90 + vt - 1) / vt;
    const TensorId val = o.tensor("argmax_val", DType::kF32, {kB, parts}, TensorRole::kScratch);
    const TensorId idx = o.tensor("argmax_idx", DType::kI32, {kB, parts}, TensorRole::kScratch);
    for (int64_t p = 0; p < parts; ++p)
      for (auto rows : {Range{0, 1}, Range{1, kB}}) {  // row splits write their rows of the slot
        const Range vs{p * vt, std::min<int64_t>(p * vt + vt, 90)};
        o.task(TaskKind::kLmHead, {R(x, {rows, {0, 64}}), R(w, {vs, {0, 64}}), R(nw, {{0, 64}})},
               {R(logits, {rows, vs}), R(val, {rows, {p, p + 1}}), R(idx, {rows, {p, p + 1}})});
      }
    o.task(TaskKind::kArgmaxReduce, {R(val, {{0, kB}, {0, parts}}), R(idx, {{0, kB}, {0, parts}})},
           {R(tok, {{0, kB}})});
    o.expect_match(0);
  }
}

// A fused attention: nq = 4, nkv = 2 (G = 2), hd = 16, S = 8, qk-normed, llama3 rope.
struct FusedAttentionBench {
  OpBench o;
  TensorId q, k, v, kc, vc, qnw, knw, y;
  explicit FusedAttentionBench(bool normed) {
    q = o.tensor("q", DType::kBF16, {kB, 64}, TensorRole::kActivation);
    k = o.tensor("k", DType::kBF16, {kB, 32}, TensorRole::kActivation);
    v = o.tensor("v", DType::kBF16, {kB, 32}, TensorRole::kActivation);
    kc = o.tensor("kc", DType::kBF16, {kB, 8, 2, 16}, TensorRole::kKvCache);
    vc = o.tensor("vc", DType::kBF16, {kB, 8, 2, 16}, TensorRole::kKvCache);
    qnw = o.weight("qnw", {16}, DType::kBF16, 0.5f, 1.5f);
    knw = o.weight("knw", {16}, DType::kBF16, 0.5f, 1.5f);
    y = o.tensor("y", DType::kBF16, {kB, 64}, TensorRole::kActivation);
    Attrs a = {{"num_q_heads", int64_t{4}}, {"num_kv_heads", int64_t{2}}, {"head_dim", int64_t{16}},
               {"scale", 0.25}, {"theta", 500000.0}, {"rope_type", std::string("llama3")},
               {"factor", 32.0}, {"low_freq_factor", 1.0}, {"high_freq_factor", 4.0},
               {"original_max_position_embeddings", int64_t{64}}};
    std::vector<TensorId> in = {q, k, v, kc, vc};
    if (normed) in.insert(in.end(), {qnw, knw}), a["eps"] = 1e-6;
    o.op(OpKind::kAttention, in, {y, kc, vc}, a);
    this->normed = normed;
  }
  std::vector<Region> norms(bool q_side, bool k_side) const {
    std::vector<Region> r;
    if (normed && q_side) r.push_back(R(qnw, {{0, 16}}));
    if (normed && k_side) r.push_back(R(knw, {{0, 16}}));
    return r;
  }
  // One kv_append task per kv head: k and v columns (and k's norm weight) -> both caches.
  void append_tasks() {
    for (int64_t h = 0; h < 2; ++h) {
      const Range cols{h * 16, h * 16 + 16};
      std::vector<Region> reads = {R(k, {{0, kB}, cols}), R(v, {{0, kB}, cols})};
      for (const Region& n : norms(false, true)) reads.push_back(n);
      o.task(TaskKind::kKvAppend, reads,
             {R(kc, {{0, kB}, {0, 8}, {h, h + 1}, {0, 16}}), R(vc, {{0, kB}, {0, 8}, {h, h + 1}, {0, 16}})});
    }
  }
  bool normed = false;
};

TEST(FusedKernels, FusedAttentionOneSplit) {
  for (bool normed : {false, true})
    for (auto [rt, ht] : {std::pair{3, 1}, {1, 2}, {2, 1}}) {
      FusedAttentionBench a(normed);
      for (int64_t b = 0; b < kB; b += rt)
        for (int64_t h = 0; h < 2; h += ht) {
          const Range rows{b, std::min<int64_t>(b + rt, kB)}, heads{h, h + ht};
          const Range qcols{h * 32, (h + ht) * 32}, kcols{h * 16, (h + ht) * 16};
          std::vector<Region> reads = {R(a.q, {rows, qcols}), R(a.k, {rows, kcols}), R(a.v, {rows, kcols})};
          for (const Region& n : a.norms(true, true)) reads.push_back(n);
          const Region kcr = R(a.kc, {rows, {0, 8}, heads, {0, 16}}), vcr = R(a.vc, {rows, {0, 8}, heads, {0, 16}});
          reads.insert(reads.end(), {kcr, vcr});
          a.o.task(TaskKind::kAttention, reads, {R(a.y, {rows, qcols}), kcr, vcr});
        }
      for (int64_t pos : {0, 3, 7}) a.o.expect_match(pos);
    }
}

// Fewer query heads per task than a kv head has: each task prepares position pos's k and
// v itself, reads older rows from the caches, and kv_append tasks after all of them store
// the row (docs/ir.md); the tasks may also span kv heads.
TEST(FusedKernels, FusedAttentionQueryHeadsThenAppends) {
  for (bool normed : {false, true})
    for (auto [rt, jt] : {std::pair{3, 1}, {1, 3}, {2, 2}}) {
      FusedAttentionBench a(normed);
      for (int64_t b = 0; b < kB; b += rt)
        for (int64_t j = 0; j < 4; j += jt) {
          const int64_t j1 = std::min<int64_t>(j + jt, 4);
          const Range rows{b, std::min<int64_t>(b + rt, kB)}, heads{j / 2, (j1 - 1) / 2 + 1};
          const Range qcols{j * 16, j1 * 16}, kcols{heads.lo * 16, heads.hi * 16};
          std::vector<Region> reads = {R(a.q, {rows, qcols}), R(a.k, {rows, kcols}), R(a.v, {rows, kcols})};
          for (const Region& n : a.norms(true, true)) reads.push_back(n);
          reads.insert(reads.end(), {R(a.kc, {rows, {0, 8}, heads, {0, 16}}), R(a.vc, {rows, {0, 8}, heads, {0, 16}})});
          a.o.task(TaskKind::kAttention, reads, {R(a.y, {rows, qcols})});
        }
      a.append_tasks();
      for (int64_t pos : {0, 3, 7}) a.o.expect_match(pos);
    }
}

TEST(FusedKernels, FusedAttentionSplits) {
  for (bool normed : {false, true})
    for (int64_t splits : {1, 3}) {
      FusedAttentionBench a(normed);
      const TensorId part = a.o.tensor("part", DType::kF32, {kB, 4, splits, 18}, TensorRole::kScratch);
      a.append_tasks();
      for (int64_t h = 0; h < 2; ++h)
        for (int64_t s = 0; s < splits; ++s) {
          const Range pr{s * 8 / splits, (s + 1) * 8 / splits};
          std::vector<Region> reads = {R(a.q, {{0, kB}, {h * 32, h * 32 + 32}})};
          for (const Region& n : a.norms(true, false)) reads.push_back(n);
          reads.insert(reads.end(),
                       {R(a.kc, {{0, kB}, pr, {h, h + 1}, {0, 16}}), R(a.vc, {{0, kB}, pr, {h, h + 1}, {0, 16}})});
          a.o.task(TaskKind::kAttentionPartial, reads, {R(part, {{0, kB}, {2 * h, 2 * h + 2}, {s, s + 1}, {0, 18}})});
        }
      for (int64_t h = 0; h < 2; ++h)
        a.o.task(TaskKind::kAttentionMerge, {R(part, {{0, kB}, {2 * h, 2 * h + 2}, {0, splits}, {0, 18}})},
                 {R(a.y, {{0, kB}, {h * 32, h * 32 + 32}})});
      // Split softmax reassociates the sums (as unfused): equal up to one bf16 step; the
      // caches, written by the kv_append tasks, exactly.
      for (int64_t pos : {0, 5}) a.o.expect_match(pos, splits == 1 ? 0 : 1.0 / 128);
    }
}

TEST(FusedKernels, FusedTasksMustDeclareWhatTheyRead) {
  FusedAttentionBench a(true);
  a.o.task(TaskKind::kKvAppend, {R(a.k, {{0, kB}, {0, 16}}), R(a.v, {{0, kB}, {0, 16}})},
           {R(a.kc, {{0, kB}, {0, 8}, {0, 1}, {0, 16}}), R(a.vc, {{0, kB}, {0, 8}, {0, 1}, {0, 16}})});
  try {
    prepare_task(a.o.module(), 0);
    ADD_FAILURE() << "a kv_append task that does not declare the k norm weight was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("reads knw[0:16] but declares no read region containing it"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace mpk
