// Every operator kind and form of the CPU reference (run_op) against the naive f64
// implementation of docs/ir.md (naive_f64.h), on random inputs, several shapes and both
// model flavours (llama: llama3 RoPE, no q/k norm; qwen3: q/k norm, default RoPE), within
// the bf16 tolerance of naive_bench.h; copies and the argmax exactly.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ir/rope.h"
#include "tests/runtime/naive_bench.h"

namespace mpk {
namespace {

using test::agrees;
using test::Agreement;
using test::expect_op_agrees;
using test::NaiveBench;
using A = TensorRole;

Attrs default_rope(int64_t hd, double theta) {
  return {{"head_dim", hd}, {"theta", theta}, {"rope_type", std::string("default")}};
}

// Long wavelengths over 64 positions, so the three llama3 regimes all occur.
Attrs llama3_rope(int64_t hd) {
  return {{"head_dim", hd}, {"theta", 500000.0}, {"rope_type", std::string("llama3")}, {"factor", 32.0},
          {"low_freq_factor", 1.0}, {"high_freq_factor", 4.0}, {"original_max_position_embeddings", int64_t{64}}};
}

std::string dtype_name(DType d) { return std::string(name_of(d)); }

TEST(NaiveOps, EmbeddingIsExact) {
  for (DType stored : {DType::kBF16, DType::kF16, DType::kF32})
    for (int64_t step : {0, 1, 2}) {  // steps 0 and 1 read the prompt, step 2 the tokens
      NaiveBench nb;
      const TensorId table = nb.weight("table", {40, 96}, stored);
      const TensorId tok = nb.tensor("tokens", DType::kI32, {3}, A::kInput);
      const TensorId y = nb.tensor("y", DType::kBF16, {3, 96}, A::kActivation);
      nb.op(OpKind::kEmbedding, {table, tok}, {y});
      nb.token_values = {3, 17, 39};
      expect_op_agrees(nb, step, {y}, "table " + dtype_name(stored), true, {5, 6});
    }
}

TEST(NaiveOps, RmsNorm) {
  struct Case {
    int64_t rows, h;
    double eps, scale;
  };
  // eps 0.25 and inputs of 1e-3 (mean square ~3e-7 against eps 1e-6) make eps matter.
  for (Case c : {Case{1, 64, 1e-5, 2}, {3, 96, 1e-6, 1e-3}, {2, 300, 0.25, 2}, {3, 2048, 1e-5, 2}}) {
    NaiveBench nb;
    const TensorId x = nb.tensor("x", DType::kBF16, {c.rows, c.h}, A::kActivation, c.scale);
    const TensorId w = nb.weight("w", {c.h}, DType::kBF16, 0.5, 1.5);
    const TensorId y = nb.tensor("y", DType::kBF16, {c.rows, c.h}, A::kActivation);
    nb.op(OpKind::kRmsNorm, {x, w}, {y}, {{"eps", c.eps}});
    expect_op_agrees(nb, 0, {y}, "H=" + std::to_string(c.h) + " eps=" + std::to_string(c.eps));
  }
}

struct LinearCase {
  int64_t rows, k, n;
  DType stored;
};
const LinearCase kLinearCases[] = {{1, 70, 37, DType::kBF16}, {3, 256, 64, DType::kF16},
                                   {2, 300, 33, DType::kF32}, {1, 2048, 16, DType::kBF16}};

std::string describe(const LinearCase& c) {
  return std::to_string(c.rows) + "x" + std::to_string(c.k) + " -> " + std::to_string(c.n) + ", W " +
         dtype_name(c.stored);
}

TEST(NaiveOps, LinearAndLmHead) {
  for (OpKind kind : {OpKind::kLinear, OpKind::kLmHead})
    for (const LinearCase& c : kLinearCases) {
      NaiveBench nb;
      const TensorId x = nb.tensor("x", DType::kBF16, {c.rows, c.k}, A::kActivation);
      const TensorId w = nb.weight("w", {c.n, c.k}, c.stored);
      const DType out = kind == OpKind::kLmHead ? DType::kF32 : DType::kBF16;
      const TensorId y = nb.tensor("y", out, {c.rows, c.n}, A::kActivation);
      nb.op(kind, {x, w}, {y});
      expect_op_agrees(nb, 0, {y}, std::string(name_of(kind)) + " " + describe(c));
    }
}

TEST(NaiveOps, LinearWithResidual) {
  for (const LinearCase& c : kLinearCases) {
    NaiveBench nb;
    const TensorId x = nb.tensor("x", DType::kBF16, {c.rows, c.k}, A::kActivation);
    const TensorId w = nb.weight("w", {c.n, c.k}, c.stored);
    const TensorId res = nb.tensor("res", DType::kBF16, {c.rows, c.n}, A::kActivation, 8);
    const TensorId y = nb.tensor("y", DType::kBF16, {c.rows, c.n}, A::kActivation);
    nb.op(OpKind::kLinear, {x, w, res}, {y});
    expect_op_agrees(nb, 0, {y}, describe(c));
  }
}

// Qwen2's q/k/v: the bias added to the f32 product before it is rounded; alone, before
// a residual, and with a fused norm.
TEST(NaiveOps, LinearWithBias) {
  for (const LinearCase& c : kLinearCases)
    for (const char* form : {"bias", "bias+residual", "bias+norm"}) {
      NaiveBench nb;
      const TensorId x = nb.tensor("x", DType::kBF16, {c.rows, c.k}, A::kActivation);
      const TensorId w = nb.weight("w", {c.n, c.k}, c.stored);
      const TensorId bias = nb.weight("bias", {c.n}, DType::kBF16, -4, 4);
      const TensorId y = nb.tensor("y", DType::kBF16, {c.rows, c.n}, A::kActivation);
      const std::string f = form;
      if (f == "bias") {
        nb.op(OpKind::kLinear, {x, w, bias}, {y}, {{"bias", int64_t{1}}});
      } else if (f == "bias+residual") {
        const TensorId res = nb.tensor("res", DType::kBF16, {c.rows, c.n}, A::kActivation, 8);
        nb.op(OpKind::kLinear, {x, w, bias, res}, {y}, {{"bias", int64_t{1}}});
      } else {
        const TensorId nw = nb.weight("nw", {c.k}, DType::kBF16, 0.5, 1.5);
        nb.op(OpKind::kLinear, {x, w, bias, nw}, {y}, {{"bias", int64_t{1}}, {"eps", 1e-6}});
      }
      expect_op_agrees(nb, 0, {y}, f + " " + describe(c));
    }
}

TEST(NaiveOps, LinearAndLmHeadWithNorm) {
  for (OpKind kind : {OpKind::kLinear, OpKind::kLmHead})
    for (double eps : {1e-5, 0.5})
      for (const LinearCase& c : kLinearCases) {
        NaiveBench nb;
        const TensorId x = nb.tensor("x", DType::kBF16, {c.rows, c.k}, A::kActivation);
        const TensorId w = nb.weight("w", {c.n, c.k}, c.stored);
        const TensorId nw = nb.weight("nw", {c.k}, DType::kBF16, 0.5, 1.5);
        const TensorId y = nb.tensor("y", kind == OpKind::kLmHead ? DType::kF32 : DType::kBF16, {c.rows, c.n},
                                     A::kActivation);
        nb.op(kind, {x, w, nw}, {y}, {{"eps", eps}});
        expect_op_agrees(nb, 0, {y}, std::string(name_of(kind)) + " " + describe(c) + " eps " + std::to_string(eps));
      }
}

TEST(NaiveOps, SwigluLinear) {
  for (bool norm : {false, true})
    for (const LinearCase& c : kLinearCases) {
      NaiveBench nb;
      const TensorId x = nb.tensor("x", DType::kBF16, {c.rows, c.k}, A::kActivation);
      const TensorId wg = nb.weight("wg", {c.n, c.k}, c.stored, -2, 2);
      const TensorId wu = nb.weight("wu", {c.n, c.k}, DType::kBF16);
      const TensorId nw = nb.weight("nw", {c.k}, DType::kBF16, 0.5, 1.5);
      const TensorId y = nb.tensor("act", DType::kBF16, {c.rows, c.n}, A::kActivation);
      Attrs attrs = {{"activation", std::string("swiglu")}};
      std::vector<TensorId> in = {x, wg, wu};
      if (norm) in.push_back(nw), attrs["eps"] = 1e-5;
      nb.op(OpKind::kLinear, in, {y}, attrs);
      expect_op_agrees(nb, 0, {y}, describe(c) + (norm ? " normed" : ""));
    }
}

TEST(NaiveOps, LmHeadWithArgmaxTokensAreExact) {
  for (bool norm : {false, true}) {
    NaiveBench nb;
    const TensorId x = nb.tensor("x", DType::kBF16, {3, 64}, A::kActivation);
    const TensorId w = nb.weight("w", {500, 64}, DType::kBF16);
    const TensorId nw = nb.weight("nw", {64}, DType::kBF16, 0.5, 1.5);
    const TensorId logits = nb.tensor("logits", DType::kF32, {3, 500}, A::kOutput);
    const TensorId tok = nb.tensor("tokens", DType::kI32, {3}, A::kInput);
    std::vector<TensorId> in = {x, w};
    Attrs attrs;
    if (norm) in.push_back(nw), attrs["eps"] = 1e-5;
    nb.op(OpKind::kLmHead, in, {logits, tok}, attrs);
    expect_op_agrees(nb, 0, {logits}, norm ? "normed" : "plain");
    EXPECT_TRUE(agrees(nb.cpu(tok), nb.naive().at(tok).v, Agreement::kExact)) << (norm ? "normed" : "plain");
  }
}

TEST(NaiveOps, QkNorm) {
  for (auto [heads, hd] : {std::pair{4, 16}, {2, 64}, {8, 128}})
    for (double eps : {1e-6, 0.5})
      for (double scale : {2.0, 1e-3}) {
        NaiveBench nb;
        const TensorId x = nb.tensor("x", DType::kBF16, {3, heads * hd}, A::kActivation, scale);
        const TensorId w = nb.weight("w", {hd}, DType::kBF16, 0.5, 1.5);
        const TensorId y = nb.tensor("y", DType::kBF16, {3, heads * hd}, A::kActivation);
        nb.op(OpKind::kQkNorm, {x, w}, {y}, {{"eps", eps}, {"head_dim", int64_t{hd}}});
        expect_op_agrees(nb, 0, {y}, "hd " + std::to_string(hd) + " eps " + std::to_string(eps));
      }
}

TEST(NaiveOps, RopeFrequenciesFollowTheFormula) {
  // The CPU's and codegen's table (ir/rope.h, f32) against the formula in double.
  for (const Attrs& a : {default_rope(64, 10000), default_rope(128, 1e6), llama3_rope(64), llama3_rope(128)}) {
    const std::vector<float> got = rope_inverse_frequencies(a);
    const std::vector<double> want = naive::rope_inverse_frequencies(a);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i)
      EXPECT_LE(std::fabs(got[i] - want[i]), std::ldexp(want[i], -24)) << attr_str(a, "rope_type") << " i=" << i;
  }
}

TEST(NaiveOps, Rope) {
  for (const Attrs& a : {default_rope(64, 10000), default_rope(128, 1e6), llama3_rope(64), llama3_rope(16)})
    for (int64_t pos : {0, 1, 7, 100}) {
      const int64_t hd = attr_int(a, "head_dim");
      NaiveBench nb;
      const TensorId x = nb.tensor("x", DType::kBF16, {2, 4 * hd}, A::kActivation);
      const TensorId y = nb.tensor("y", DType::kBF16, {2, 4 * hd}, A::kActivation);
      nb.op(OpKind::kRope, {x}, {y}, a);
      expect_op_agrees(nb, pos, {y}, attr_str(a, "rope_type") + " hd " + std::to_string(hd));
    }
}

TEST(NaiveOps, KvAppendPlainIsExactAndWithRopeClose) {
  for (bool roped : {false, true})
    for (int64_t pos : {0, 5, 7}) {
      NaiveBench nb;
      const TensorId k = nb.tensor("k", DType::kBF16, {3, 2 * 64}, A::kActivation);
      const TensorId v = nb.tensor("v", DType::kBF16, {3, 2 * 64}, A::kActivation);
      const TensorId kc = nb.tensor("kc", DType::kBF16, {3, 8, 2, 64}, A::kKvCache);
      const TensorId vc = nb.tensor("vc", DType::kBF16, {3, 8, 2, 64}, A::kKvCache);
      nb.op(OpKind::kKvAppend, {k, v}, {kc, vc}, roped ? llama3_rope(64) : Attrs{});
      expect_op_agrees(nb, pos, {kc}, roped ? "roped k" : "k", !roped);
      EXPECT_TRUE(agrees(nb.cpu(vc), nb.naive().at(vc).v, Agreement::kExact)) << "v at pos " << pos;
    }
}

struct AttentionCase {
  int64_t nq, nkv, hd, seq;
};
const AttentionCase kAttentionCases[] = {{4, 2, 16, 8}, {4, 4, 64, 16}, {8, 2, 32, 12}, {2, 1, 128, 4}};

Attrs attention_attrs(const AttentionCase& c) {
  return {{"num_q_heads", c.nq}, {"num_kv_heads", c.nkv}, {"head_dim", c.hd},
          {"scale", 1.0 / std::sqrt(static_cast<double>(c.hd))}};
}

std::string describe(const AttentionCase& c, int64_t pos) {
  return "nq " + std::to_string(c.nq) + " nkv " + std::to_string(c.nkv) + " hd " + std::to_string(c.hd) + " pos " +
         std::to_string(pos);
}

TEST(NaiveOps, AttentionWithGroupedQueryHeads) {
  for (const AttentionCase& c : kAttentionCases)
    for (int64_t pos : {int64_t{0}, c.seq / 2, c.seq - 1}) {
      NaiveBench nb;
      const TensorId q = nb.tensor("q", DType::kBF16, {3, c.nq * c.hd}, A::kActivation);
      const TensorId kc = nb.tensor("kc", DType::kBF16, {3, c.seq, c.nkv, c.hd}, A::kKvCache);
      const TensorId vc = nb.tensor("vc", DType::kBF16, {3, c.seq, c.nkv, c.hd}, A::kKvCache);
      const TensorId y = nb.tensor("y", DType::kBF16, {3, c.nq * c.hd}, A::kActivation);
      nb.op(OpKind::kAttention, {q, kc, vc}, {y}, attention_attrs(c));
      expect_op_agrees(nb, pos, {y}, describe(c, pos));
    }
}

// fuse-attention's operator: llama flavour (llama3 RoPE, no norms) and qwen3 flavour
// (q/k norms, default RoPE with theta 1e6).
TEST(NaiveOps, FusedAttentionBothFlavours) {
  for (bool qwen3 : {false, true})
    for (const AttentionCase& c : kAttentionCases)
      for (int64_t pos : {int64_t{0}, c.seq / 2, c.seq - 1}) {
        NaiveBench nb;
        const TensorId q = nb.tensor("q", DType::kBF16, {2, c.nq * c.hd}, A::kActivation);
        const TensorId k = nb.tensor("k", DType::kBF16, {2, c.nkv * c.hd}, A::kActivation);
        const TensorId v = nb.tensor("v", DType::kBF16, {2, c.nkv * c.hd}, A::kActivation);
        const TensorId kc = nb.tensor("kc", DType::kBF16, {2, c.seq, c.nkv, c.hd}, A::kKvCache);
        const TensorId vc = nb.tensor("vc", DType::kBF16, {2, c.seq, c.nkv, c.hd}, A::kKvCache);
        const TensorId qnw = nb.weight("qnw", {c.hd}, DType::kBF16, 0.5, 1.5);
        const TensorId knw = nb.weight("knw", {c.hd}, DType::kBF16, 0.5, 1.5);
        const TensorId y = nb.tensor("y", DType::kBF16, {2, c.nq * c.hd}, A::kActivation);
        Attrs a = qwen3 ? default_rope(c.hd, 1e6) : llama3_rope(c.hd);
        for (const auto& [key, value] : attention_attrs(c)) a[key] = value;
        std::vector<TensorId> in = {q, k, v, kc, vc};
        if (qwen3) in.push_back(qnw), in.push_back(knw), a["eps"] = 1e-6;
        nb.op(OpKind::kAttention, in, {y, kc, vc}, a);
        const std::string what = (qwen3 ? "qwen3 " : "llama ") + describe(c, pos);
        expect_op_agrees(nb, pos, {y, kc}, what);
        EXPECT_TRUE(agrees(nb.cpu(vc), nb.naive().at(vc).v, Agreement::kExact)) << what;
      }
}

TEST(NaiveOps, SiluMulAndExactResidualAdd) {
  for (OpKind kind : {OpKind::kSiluMul, OpKind::kResidualAdd})
    for (double scale : {8.0, 1e-2}) {
      NaiveBench nb;
      const TensorId g = nb.tensor("g", DType::kBF16, {3, 300}, A::kActivation, scale);
      const TensorId u = nb.tensor("u", DType::kBF16, {3, 300}, A::kActivation, 1);
      const TensorId y = nb.tensor("y", DType::kBF16, {3, 300}, A::kActivation);
      nb.op(kind, {g, u}, {y});
      // The sum of two bf16 values is exact in f32 or rounds as the exact sum would.
      expect_op_agrees(nb, 0, {y}, std::string(name_of(kind)), kind == OpKind::kResidualAdd);
    }
}

TEST(NaiveOps, ArgmaxIsExactWithTiesNanAndInfinities) {
  NaiveBench nb;
  const TensorId logits = nb.tensor("logits", DType::kF32, {4, 90}, A::kOutput);
  const TensorId tok = nb.tensor("tokens", DType::kI32, {4}, A::kInput);
  nb.op(OpKind::kArgmax, {logits}, {tok});
  nb.start();
  // Row 1: a tie at 20 and 61; row 2: a NaN first; row 3: nothing above -inf.
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<std::pair<int64_t, double>> all = {{90 + 61, 9}, {90 + 20, 9}, {180, std::nan("")}, {180 + 5, 7}};
  for (int64_t i = 0; i < 90; ++i) all.emplace_back(270 + i, i % 2 ? -inf : std::nan(""));
  for (auto [i, v] : all) nb.set(logits, i, v);
  nb.run_op(0);
  EXPECT_TRUE(agrees(nb.cpu(tok), nb.naive().at(tok).v, Agreement::kExact));
  EXPECT_EQ(nb.cpu(tok)[1], 20);
  EXPECT_EQ(nb.cpu(tok)[2], 5);
  EXPECT_EQ(nb.cpu(tok)[3], 0);
}

}  // namespace
}  // namespace mpk
