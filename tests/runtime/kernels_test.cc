// Per-task kernels against the whole-operator reference: every operator kind, on random
// data, under several tilings (including ones the decompose pass does not produce: row
// splits, multi-head tasks, uneven tiles), plus rejection of inconsistent tasks.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <random>

#include "ir/error.h"
#include "ir/rope.h"
#include "runtime/cpu/linear_simd.h"
#include "tests/runtime/op_bench.h"

namespace mpk {
namespace {

using test::kB;
using test::OpBench;
using test::R;

TEST(Kernels, Embedding) {
  for (DType dt : {DType::kBF16, DType::kF32, DType::kF16})
    for (auto [rt, ct] : {std::pair{3, 96}, {1, 32}, {2, 40}}) {
      OpBench o;
      const TensorId table = o.weight("table", {40, 96}, dt);
      const TensorId tok = o.tensor("tokens", DType::kI32, {kB}, TensorRole::kInput);
      const TensorId y = o.tensor("y", DType::kBF16, {kB, 96}, TensorRole::kActivation);
      o.op(OpKind::kEmbedding, {table, tok}, {y});
      for (int64_t b = 0; b < kB; b += rt)
        for (int64_t c = 0; c < 96; c += ct) {
          const Range rows{b, std::min<int64_t>(b + rt, kB)}, cols{c, std::min<int64_t>(c + ct, 96)};
          o.task(TaskKind::kEmbedding, {R(table, {{0, 40}, cols}), R(tok, {rows})}, {R(y, {rows, cols})});
        }
      o.token_values = {3, 17, 39};
      o.expect_match(2, 0, {5, 6});  // step 2 >= prompt length: tokens come from `tokens`
      o.expect_match(1, 0, {5, 6});  // from the prompt
    }
}

TEST(Kernels, EmbeddingRejectsOutOfRangeTokens) {
  OpBench o;
  const TensorId table = o.weight("table", {40, 8}, DType::kBF16);
  const TensorId tok = o.tensor("tokens", DType::kI32, {1}, TensorRole::kInput);
  const TensorId y = o.tensor("y", DType::kBF16, {1, 8}, TensorRole::kActivation);
  o.op(OpKind::kEmbedding, {table, tok}, {y});
  const Weights w = random_weights(o.module(), 1);
  TensorStore s(o.module().program, w);
  s.at(tok).store_i32(0, 40);
  const std::vector<int64_t> prompt = {1};
  EXPECT_THROW(run_op(o.module().program, 0, s, StepContext{1, &prompt, nullptr}), Error);
}

TEST(Kernels, RmsNorm) {
  for (int64_t rt : {3, 1, 2}) {
    OpBench o;
    const TensorId x = o.tensor("x", DType::kBF16, {kB, 96}, TensorRole::kActivation);
    const TensorId w = o.weight("w", {96}, DType::kBF16, 0.5f, 1.5f);
    const TensorId y = o.tensor("y", DType::kBF16, {kB, 96}, TensorRole::kActivation);
    o.op(OpKind::kRmsNorm, {x, w}, {y}, {{"eps", 1e-5}});
    for (int64_t b = 0; b < kB; b += rt) {
      const Range rows{b, std::min(b + rt, kB)};
      o.task(TaskKind::kRmsNorm, {R(x, {rows, {0, 96}}), R(w, {{0, 96}})}, {R(y, {rows, {0, 96}})});
    }
    o.expect_match(0);
  }
}

TEST(Kernels, LinearAndLmHead) {
  for (OpKind kind : {OpKind::kLinear, OpKind::kLmHead})
    for (DType dt : {DType::kBF16, DType::kF16, DType::kF32})
      for (auto [rt, nt] : {std::pair{3, 37}, {3, 8}, {2, 5}, {1, 1}, {3, 16}}) {
        OpBench o;
        const TensorId x = o.tensor("x", DType::kBF16, {kB, 70}, TensorRole::kActivation);
        const TensorId w = o.weight("w", {37, 70}, dt);
        const DType out = kind == OpKind::kLmHead ? DType::kF32 : DType::kBF16;
        const TensorId y = o.tensor("y", out, {kB, 37}, TensorRole::kActivation);
        o.op(kind, {x, w}, {y});
        const TaskKind tk = kind == OpKind::kLmHead ? TaskKind::kLmHead : TaskKind::kLinear;
        for (int64_t b = 0; b < kB; b += rt)
          for (int64_t n = 0; n < 37; n += nt) {
            const Range rows{b, std::min<int64_t>(b + rt, kB)}, ns{n, std::min<int64_t>(n + nt, 37)};
            o.task(tk, {R(x, {rows, {0, 70}}), R(w, {ns, {0, 70}})}, {R(y, {rows, ns})});
          }
        o.expect_match(0);
      }
}

TEST(Kernels, SimdLinearIsBitIdenticalToScalar) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1, 1);
  for (auto [rows, k, n0, n1] : {std::tuple{1, 2048, 0, 96}, {3, 70, 0, 37}, {2, 64, 5, 100}, {1, 7, 0, 9}}) {
    std::vector<float> x(rows * k);
    std::vector<uint16_t> w(static_cast<size_t>(n1) * k);
    for (float& v : x) v = u(rng);
    for (uint16_t& v : w) v = f32_to_bf16(u(rng));
    std::vector<float> a(rows * (n1 - n0)), b(a.size(), -1);
    linear_bf16_scalar(x.data(), rows, k, w.data(), n0, n1, a.data());
    if (!linear_bf16_simd(x.data(), rows, k, w.data(), n0, n1, b.data())) GTEST_SKIP() << "no AVX2 on this CPU";
    ASSERT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0) << rows << "x" << k << " rows " << n0 << ":" << n1;
  }
}

TEST(Kernels, QkNorm) {
  for (int64_t ht : {4, 1, 3}) {
    OpBench o;
    const TensorId x = o.tensor("x", DType::kBF16, {kB, 64}, TensorRole::kActivation);
    const TensorId w = o.weight("w", {16}, DType::kBF16, 0.5f, 1.5f);
    const TensorId y = o.tensor("y", DType::kBF16, {kB, 64}, TensorRole::kActivation);
    o.op(OpKind::kQkNorm, {x, w}, {y}, {{"eps", 1e-6}, {"head_dim", int64_t{16}}});
    for (int64_t h = 0; h < 4; h += ht) {
      const Range cols{h * 16, std::min<int64_t>(h + ht, 4) * 16};
      o.task(TaskKind::kQkNorm, {R(x, {{0, kB}, cols}), R(w, {{0, 16}})}, {R(y, {{0, kB}, cols})});
    }
    o.expect_match(0);
  }
}

TEST(Kernels, RopeDefaultAndLlama3) {
  const Attrs def = {{"head_dim", int64_t{16}}, {"theta", 10000.0}, {"rope_type", std::string("default")}};
  Attrs l3 = {{"head_dim", int64_t{16}}, {"theta", 500000.0}, {"rope_type", std::string("llama3")},
              {"factor", 32.0}, {"low_freq_factor", 1.0}, {"high_freq_factor", 4.0},
              {"original_max_position_embeddings", int64_t{64}}};
  for (const Attrs& a : {def, l3})
    for (int64_t ht : {4, 1, 3}) {
      OpBench o;
      const TensorId x = o.tensor("x", DType::kBF16, {kB, 64}, TensorRole::kActivation);
      const TensorId y = o.tensor("y", DType::kBF16, {kB, 64}, TensorRole::kActivation);
      o.op(OpKind::kRope, {x}, {y}, a);
      for (int64_t h = 0; h < 4; h += ht) {
        const Range cols{h * 16, std::min<int64_t>(h + ht, 4) * 16};
        o.task(TaskKind::kRope, {R(x, {{0, kB}, cols})}, {R(y, {{0, kB}, cols})});
      }
      o.expect_match(7);
      o.expect_match(0);
    }
}

TEST(Kernels, RopeInverseFrequencies) {
  Attrs a = {{"head_dim", int64_t{8}}, {"theta", 10000.0}, {"rope_type", std::string("default")}};
  const std::vector<float> inv = rope_inverse_frequencies(a);
  ASSERT_EQ(inv.size(), 4u);
  EXPECT_FLOAT_EQ(inv[0], 1.0f);
  EXPECT_FLOAT_EQ(inv[2], static_cast<float>(std::pow(10000.0, -0.5)));
  // llama3: long wavelengths are divided by the factor, short ones kept.
  a = {{"head_dim", int64_t{64}}, {"theta", 500000.0}, {"rope_type", std::string("llama3")},
       {"factor", 32.0}, {"low_freq_factor", 1.0}, {"high_freq_factor", 4.0},
       {"original_max_position_embeddings", int64_t{8192}}};
  const std::vector<float> l3 = rope_inverse_frequencies(a);
  EXPECT_FLOAT_EQ(l3[0], 1.0f);
  EXPECT_FLOAT_EQ(l3[31], static_cast<float>(std::pow(500000.0, -62.0 / 64) / 32));
}

TEST(Kernels, KvAppend) {
  for (int64_t ht : {2, 1})
    for (int64_t rt : {3, 1}) {
      OpBench o;
      const TensorId k = o.tensor("k", DType::kBF16, {kB, 32}, TensorRole::kActivation);
      const TensorId v = o.tensor("v", DType::kBF16, {kB, 32}, TensorRole::kActivation);
      const TensorId kc = o.tensor("kc", DType::kBF16, {kB, 8, 2, 16}, TensorRole::kKvCache);
      const TensorId vc = o.tensor("vc", DType::kBF16, {kB, 8, 2, 16}, TensorRole::kKvCache);
      o.op(OpKind::kKvAppend, {k, v}, {kc, vc});
      for (int64_t b = 0; b < kB; b += rt)
        for (int64_t h = 0; h < 2; h += ht) {
          const Range rows{b, std::min(b + rt, kB)}, heads{h, h + ht}, cols{h * 16, (h + ht) * 16};
          o.task(TaskKind::kKvAppend, {R(k, {rows, cols}), R(v, {rows, cols})},
                 {R(kc, {rows, {0, 8}, heads, {0, 16}}), R(vc, {rows, {0, 8}, heads, {0, 16}})});
        }
      o.expect_match(5);
    }
}

// Attention with nq = 4, nkv = 2 (G = 2), hd = 16, S = 8.
struct AttentionBench {
  OpBench o;
  TensorId q, kc, vc, y;
  AttentionBench() {
    q = o.tensor("q", DType::kBF16, {kB, 64}, TensorRole::kActivation);
    kc = o.tensor("kc", DType::kBF16, {kB, 8, 2, 16}, TensorRole::kKvCache);
    vc = o.tensor("vc", DType::kBF16, {kB, 8, 2, 16}, TensorRole::kKvCache);
    y = o.tensor("y", DType::kBF16, {kB, 64}, TensorRole::kActivation);
    o.op(OpKind::kAttention, {q, kc, vc}, {y},
         {{"num_q_heads", int64_t{4}}, {"num_kv_heads", int64_t{2}}, {"head_dim", int64_t{16}}, {"scale", 0.25}});
  }
};

TEST(Kernels, AttentionWholeTasks) {
  for (auto [rt, ht] : {std::pair{3, 1}, {1, 2}, {2, 1}}) {
    AttentionBench a;
    for (int64_t b = 0; b < kB; b += rt)
      for (int64_t h = 0; h < 2; h += ht) {
        const Range rows{b, std::min<int64_t>(b + rt, kB)}, heads{h, h + ht}, cols{h * 32, (h + ht) * 32};
        a.o.task(TaskKind::kAttention,
                 {R(a.q, {rows, cols}), R(a.kc, {rows, {0, 8}, heads, {0, 16}}), R(a.vc, {rows, {0, 8}, heads, {0, 16}})},
                 {R(a.y, {rows, cols})});
      }
    for (int64_t pos : {0, 3, 7}) a.o.expect_match(pos);
  }
}

TEST(Kernels, AttentionPartialAndMerge) {
  for (int64_t splits : {1, 2, 3, 8})
    for (int64_t pos : {0, 2, 5, 7}) {
      AttentionBench a;
      const TensorId part = a.o.tensor("part", DType::kF32, {kB, 4, splits, 18}, TensorRole::kScratch);
      for (int64_t h = 0; h < 2; ++h)
        for (int64_t s = 0; s < splits; ++s) {
          const Range pr{s * 8 / splits, (s + 1) * 8 / splits};
          a.o.task(TaskKind::kAttentionPartial,
                   {R(a.q, {{0, kB}, {h * 32, h * 32 + 32}}), R(a.kc, {{0, kB}, pr, {h, h + 1}, {0, 16}}),
                    R(a.vc, {{0, kB}, pr, {h, h + 1}, {0, 16}})},
                   {R(part, {{0, kB}, {2 * h, 2 * h + 2}, {s, s + 1}, {0, 18}})});
        }
      for (int64_t h = 0; h < 2; ++h)
        a.o.task(TaskKind::kAttentionMerge, {R(part, {{0, kB}, {2 * h, 2 * h + 2}, {0, splits}, {0, 18}})},
                 {R(a.y, {{0, kB}, {h * 32, h * 32 + 32}})});
      // Split softmax reassociates the sums: equal up to one bf16 rounding step.
      a.o.expect_match(pos, splits == 1 ? 0 : 1.0 / 128);
    }
}

TEST(Kernels, SiluMulAndResidualAdd) {
  for (OpKind kind : {OpKind::kSiluMul, OpKind::kResidualAdd})
    for (int64_t ct : {100, 32, 7}) {
      OpBench o;
      const TensorId g = o.tensor("g", DType::kBF16, {kB, 100}, TensorRole::kActivation);
      const TensorId u = o.tensor("u", DType::kBF16, {kB, 100}, TensorRole::kActivation);
      const TensorId y = o.tensor("y", DType::kBF16, {kB, 100}, TensorRole::kActivation);
      o.op(kind, {g, u}, {y});
      const TaskKind tk = kind == OpKind::kSiluMul ? TaskKind::kSiluMul : TaskKind::kResidualAdd;
      for (int64_t c = 0; c < 100; c += ct) {
        const Range cols{c, std::min<int64_t>(c + ct, 100)};
        o.task(tk, {R(g, {{0, kB}, cols}), R(u, {{0, kB}, cols})}, {R(y, {{0, kB}, cols})});
      }
      o.expect_match(0);
    }
}

TEST(Kernels, ArgmaxPartialAndReduceWithTies) {
  for (int64_t vt : {90, 16, 7, 1}) {
    OpBench o;
    const TensorId logits = o.tensor("logits", DType::kF32, {kB, 90}, TensorRole::kOutput);
    const TensorId tok = o.tensor("tokens", DType::kI32, {kB}, TensorRole::kInput);
    o.op(OpKind::kArgmax, {logits}, {tok});
    const int64_t parts = (90 + vt - 1) / vt;
    const TensorId val = o.tensor("argmax_val", DType::kF32, {kB, parts}, TensorRole::kScratch);
    const TensorId idx = o.tensor("argmax_idx", DType::kI32, {kB, parts}, TensorRole::kScratch);
    for (int64_t p = 0; p < parts; ++p) {
      const Range vs{p * vt, std::min<int64_t>(p * vt + vt, 90)};
      o.task(TaskKind::kArgmaxPartial, {R(logits, {{0, kB}, vs})},
             {R(val, {{0, kB}, {p, p + 1}}), R(idx, {{0, kB}, {p, p + 1}})});
    }
    o.task(TaskKind::kArgmaxReduce, {R(val, {{0, kB}, {0, parts}}), R(idx, {{0, kB}, {0, parts}})}, {R(tok, {{0, kB}})});
    o.expect_match(0);

    // Ties go to the lowest index, whatever the tiling.
    TensorStore s(o.module().program, Weights{});
    for (int64_t i = 0; i < kB * 90; ++i) s.at(logits).store(i, static_cast<float>(i % 5));
    s.at(logits).store(1 * 90 + 61, 9.0f);
    s.at(logits).store(1 * 90 + 20, 9.0f);
    s.at(logits).store(2 * 90 + 0, std::nanf(""));
    StepRecorder rec(1, kB);
    const std::vector<int64_t> prompt = {1};
    for (TaskId t = 0; t < static_cast<TaskId>(o.module().graph.tasks.size()); ++t)
      run_task(prepare_task(o.module(), t), s, StepContext{0, &prompt, &rec});
    EXPECT_EQ(rec.token(0, 0), 4);
    EXPECT_EQ(rec.token(0, 1), 20);
    EXPECT_EQ(rec.top_logit(0, 1), 9.0f);
    EXPECT_EQ(rec.token(0, 2), 4);  // a NaN never wins
  }
}

TEST(Kernels, InconsistentTasksAreRejected) {
  auto make = [] {
    auto o = std::make_unique<OpBench>();
    const TensorId x = o->tensor("x", DType::kBF16, {kB, 70}, TensorRole::kActivation);
    const TensorId w = o->weight("w", {37, 70}, DType::kBF16);
    const TensorId y = o->tensor("y", DType::kBF16, {kB, 37}, TensorRole::kActivation);
    o->op(OpKind::kLinear, {x, w}, {y});
    return o;
  };
  auto msg = [](OpBench& o) {
    try {
      prepare_task(o.module(), 0);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  {  // W rows narrower than the output columns: the task would read undeclared memory.
    auto o = make();
    o->task(TaskKind::kLinear, {R(0, {{0, kB}, {0, 70}}), R(1, {{0, 8}, {0, 70}})}, {R(2, {{0, kB}, {0, 16}})});
    EXPECT_NE(msg(*o).find("declares no read region containing it"), std::string::npos) << msg(*o);
  }
  {  // Out of bounds.
    auto o = make();
    o->task(TaskKind::kLinear, {R(0, {{0, kB}, {0, 70}}), R(1, {{0, 40}, {0, 70}})}, {R(2, {{0, kB}, {0, 40}})});
    EXPECT_NE(msg(*o).find("lies outside the tensor"), std::string::npos) << msg(*o);
  }
  {  // Wrong task kind for the operator.
    auto o = make();
    o->task(TaskKind::kRope, {R(0, {{0, kB}, {0, 70}})}, {R(2, {{0, kB}, {0, 37}})});
    EXPECT_NE(msg(*o).find("does not belong"), std::string::npos) << msg(*o);
  }
  {  // Writes nothing of the output.
    auto o = make();
    o->task(TaskKind::kLinear, {R(0, {{0, kB}, {0, 70}}), R(1, {{0, 37}, {0, 70}})}, {});
    EXPECT_NE(msg(*o).find("does not write tensor 'y'"), std::string::npos) << msg(*o);
  }
  {  // Messages name the task and its operator.
    auto o = make();
    o->task(TaskKind::kLinear, {R(0, {{0, kB}, {0, 70}})}, {R(2, {{0, kB}, {0, 37}})});
    EXPECT_EQ(msg(*o).rfind("task 0 (op:linear): ", 0), 0u) << msg(*o);
  }
}

}  // namespace
}  // namespace mpk
