// OpBench: one operator with its tensors, weights and hand-made tasks, run as a whole
// operator and as tasks on identically filled stores, for the kernel tests.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <random>

#include "runtime/cpu/reference.h"
#include "runtime/cpu/task_kernels.h"

namespace mpk::test {

// One operator with its tensors, weights (in a chosen dtype) and hand-made tasks.
class OpBench {
 public:
  TensorId tensor(const std::string& name, DType dt, std::vector<int64_t> shape, TensorRole role) {
    return m_.program.add_tensor(Tensor{name, dt, std::move(shape), role});
  }
  // A weight tensor stored as `stored` (bf16, f16 or f32) with random values.
  TensorId weight(const std::string& name, std::vector<int64_t> shape, DType stored, float lo = -1,
                  float hi = 1) {
    const TensorId id = tensor(name, DType::kBF16, shape, TensorRole::kWeight);
    const int64_t n = m_.program.tensors[id].num_elements();
    std::shared_ptr<uint32_t[]> buf(new uint32_t[n]);
    std::uniform_real_distribution<float> u(lo, hi);
    for (int64_t i = 0; i < n; ++i) {
      const float v = u(rng_);
      if (stored == DType::kF32) reinterpret_cast<float*>(buf.get())[i] = v;
      if (stored == DType::kBF16) reinterpret_cast<uint16_t*>(buf.get())[i] = f32_to_bf16(v);
      if (stored == DType::kF16) reinterpret_cast<uint16_t*>(buf.get())[i] = f32_to_f16(v);
    }
    w_.add(name, WeightTensor{stored, shape, buf.get(), ""}, std::shared_ptr<const void>(buf, buf.get()));
    return id;
  }
  void op(OpKind kind, std::vector<TensorId> in, std::vector<TensorId> out, Attrs attrs = {}) {
    m_.program.add_op(Operator{"op", kind, std::move(in), std::move(out), std::move(attrs), -1});
  }
  void task(TaskKind kind, std::vector<Region> reads, std::vector<Region> writes) {
    Task t;
    t.op = 0;
    t.kind = kind;
    t.reads = std::move(reads);
    t.writes = std::move(writes);
    m_.graph.tasks.push_back(std::move(t));
  }
  void clear_tasks() { m_.graph.tasks.clear(); }

  // Runs the whole operator and the tasks (in order) on identically filled stores and
  // compares every non-weight tensor; `tol` 0 means bit-identical.
  void expect_match(int64_t step, double tol = 0, const std::vector<int64_t>& prompt = {1}) {
    ASSERT_FALSE(m_.graph.tasks.empty());
    TensorStore a(m_.program, w_), b(m_.program, w_);
    fill(a);
    fill(b);
    StepRecorder ra(step + 1, 8), rb(step + 1, 8);
    run_op(m_.program, 0, a, StepContext{step, &prompt, &ra});
    for (TaskId t = 0; t < static_cast<TaskId>(m_.graph.tasks.size()); ++t)
      run_task(prepare_task(m_, t), b, StepContext{step, &prompt, &rb});
    for (TensorId id = 0; id < static_cast<TensorId>(m_.program.tensors.size()); ++id) {
      const Tensor& t = m_.program.tensors[id];
      if (t.role == TensorRole::kWeight || t.role == TensorRole::kScratch) continue;
      for (int64_t i = 0; i < a.at(id).numel; ++i) {
        const float x = a.at(id).dtype == DType::kI32 ? a.at(id).load_i32(i) : a.at(id).load(i);
        const float y = b.at(id).dtype == DType::kI32 ? b.at(id).load_i32(i) : b.at(id).load(i);
        if (tol == 0) {
          ASSERT_EQ(std::memcmp(&x, &y, sizeof x), 0) << t.name << "[" << i << "]: " << x << " vs " << y;
        } else {
          ASSERT_NEAR(x, y, tol * std::fabs(x) + 1e-6) << t.name << "[" << i << "]";
        }
      }
    }
    for (int64_t r = 0; r < 8; ++r) {
      EXPECT_EQ(ra.token(step, r), rb.token(step, r));
      EXPECT_EQ(ra.top_logit(step, r), rb.top_logit(step, r));
    }
  }

  Module& module() { return m_; }
  const Weights& weights() const { return w_; }
  std::mt19937& rng() { return rng_; }
  std::vector<int32_t> token_values;

 private:
  void fill(TensorStore& s) {
    std::mt19937 r(99);
    std::uniform_real_distribution<float> u(-2, 2);
    for (TensorId id = 0; id < static_cast<TensorId>(m_.program.tensors.size()); ++id) {
      if (m_.program.tensors[id].role == TensorRole::kWeight) continue;
      TensorBuffer& b = s.at(id);
      for (int64_t i = 0; i < b.numel; ++i) {
        if (b.dtype == DType::kI32) {
          b.store_i32(i, token_values.empty() ? 0 : token_values[i % token_values.size()]);
        } else {
          b.store(i, u(r));
        }
      }
    }
  }

  Module m_;
  Weights w_;
  std::mt19937 rng_{7};
};

inline Region R(TensorId t, std::vector<Range> dims) { return Region{t, std::move(dims)}; }

inline constexpr int64_t kB = 3;  // batch rows of the benches

}  // namespace mpk::test
