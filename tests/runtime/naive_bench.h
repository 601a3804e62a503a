// NaiveBench: one operator (and optionally its tasks) on random inputs, run by the CPU
// reference or task kernels (runtime/cpu/) and by the naive f64 interpreter
// (naive_f64.h) from the same bits, and the comparisons of their results.
//
// Tolerance, from bf16 rounding: both sides evaluate the same real formula, the CPU in
// f32 and the naive side in f64, and both round every store to its dtype. A result that
// lands on different sides of a rounding boundary differs by one step of the stored
// format, at most 2^-7 of its magnitude for bf16 (8 significant bits); the f32 error
// before rounding is ~2^-20 of it. So every element must satisfy
//     |cpu - naive| <= 2^-7 |naive| + 2^-10 max|naive|,
// the max over the compared tensor: the absolute part covers values near zero after
// cancellation in a sum and an intermediate bf16 rounding that flipped (the normed x of a
// fused linear, a swiglu product, a roped q), which moves a result by a bf16 step of
// one of its terms. And since a flip needs the two evaluations to straddle a boundary,
// which happens to a few in 2^16 of the stored values, at most 1 + n/64 of n results
// stored in bf16 may differ at all: a rounding in the wrong place (before instead of
// after a residual add, say) moves many results by one step and fails. Copies, argmax
// and sums of two bf16 values are exact: they must be equal.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <stdexcept>

#include "runtime/cpu/reference.h"
#include "runtime/cpu/task_kernels.h"
#include "tests/runtime/naive_f64.h"
#include "tests/runtime/op_bench.h"

namespace mpk::test {

inline constexpr double kBf16Step = 1.0 / 128;  // 2^-7
inline constexpr double kFloor = 1.0 / 1024;    // 2^-10 of the tensor's largest magnitude

enum class Agreement {
  kExact,    // equal (copies, argmax, residual_add)
  kRounded,  // results stored in bf16 / f16: within the tolerance, and at most 1 + n/64 differ
  kClose,    // f32 results: within the tolerance
};

// The agreement a tensor of dtype `dt` must show.
inline Agreement agreement_for(DType dt) { return dt == DType::kF32 ? Agreement::kClose : Agreement::kRounded; }

// Compares `cpu` against `naive` element by element (infinities and NaNs must agree in any case).
inline ::testing::AssertionResult agrees(const std::vector<double>& cpu, const std::vector<double>& naive,
                                         Agreement how) {
  if (cpu.size() != naive.size()) return ::testing::AssertionFailure() << "sizes differ";
  double scale = 0;
  for (double v : naive)
    if (std::isfinite(v)) scale = std::max(scale, std::fabs(v));
  size_t differing = 0;
  for (size_t i = 0; i < cpu.size(); ++i) {
    const double c = cpu[i], n = naive[i];
    if (c == n || (std::isnan(c) && std::isnan(n))) continue;
    ++differing;
    const double bound = how == Agreement::kExact ? 0.0 : kBf16Step * std::fabs(n) + kFloor * scale;
    if (!std::isfinite(c) || !std::isfinite(n) || std::fabs(c - n) > bound)
      return ::testing::AssertionFailure() << "element " << i << ": cpu " << c << ", naive " << n << " (bound "
                                           << bound << ", largest |naive| " << scale << ")";
  }
  if (how == Agreement::kRounded && differing > 1 + cpu.size() / 64)
    return ::testing::AssertionFailure() << differing << " of " << cpu.size()
                                         << " rounded results differ (each within the bound), more than 1 + n/64";
  return ::testing::AssertionSuccess();
}

// Built with an OpBench (op_bench.h), whose weights hold random bf16, f16 or f32 values.
class NaiveBench {
 public:
  // A tensor filled with random values in [-scale, scale] (i32: token_values in turn).
  TensorId tensor(const std::string& name, DType dt, std::vector<int64_t> shape, TensorRole role,
                  double scale = 2) {
    const TensorId id = ob_.tensor(name, dt, std::move(shape), role);
    scale_[id] = scale;
    return id;
  }
  TensorId weight(const std::string& name, std::vector<int64_t> shape, DType stored, float lo = -1, float hi = 1) {
    return ob_.weight(name, std::move(shape), stored, lo, hi);
  }
  void op(OpKind kind, std::vector<TensorId> in, std::vector<TensorId> out, Attrs attrs = {}) {
    ob_.op(kind, std::move(in), std::move(out), std::move(attrs));
  }
  void task(TaskKind kind, std::vector<Region> reads, std::vector<Region> writes) {
    ob_.task(kind, std::move(reads), std::move(writes));
  }

  // Makes both sides' tensors (once the program is complete) and fills every non-weight
  // tensor with the same random values.
  void start() {
    const Module& m = ob_.module();
    store_ = std::make_unique<TensorStore>(m.program, ob_.weights());
    naive_ = std::make_unique<naive::Interpreter>(m.program, ob_.weights());
    std::mt19937 r(99);
    for (TensorId id = 0; id < static_cast<TensorId>(m.program.tensors.size()); ++id) {
      if (m.program.tensors[id].role == TensorRole::kWeight) continue;
      TensorBuffer& b = store_->at(id);
      std::uniform_real_distribution<double> u(-scale_[id], scale_[id]);
      for (int64_t i = 0; i < b.numel; ++i) {
        if (b.dtype == DType::kI32) {
          set(id, i, token_values.empty() ? 0 : token_values[i % token_values.size()]);
          continue;
        }
        set(id, i, naive::round_to(b.dtype, u(r)));
      }
    }
  }

  // Element `i` of tensor `id` on both sides (after start()); `v` must be a value of its
  // dtype (bf16, f32 or i32).
  void set(TensorId id, int64_t i, double v) {
    TensorBuffer& b = store_->at(id);
    if (b.dtype == DType::kF32) static_cast<float*>(b.data)[i] = static_cast<float>(v);
    if (b.dtype == DType::kBF16) static_cast<uint16_t*>(b.data)[i] = naive::bf16_bits(v);
    if (b.dtype == DType::kF16) throw std::logic_error("NaiveBench: no f16 activations");
    if (b.dtype == DType::kI32) static_cast<int32_t*>(b.data)[i] = static_cast<int32_t>(v);
    naive_->at(id).v[i] = v;
  }

  // Operator 0 on both sides at `step` (pos = step).
  void run_op(int64_t step, const std::vector<int64_t>& prompt = {1}) {
    StepRecorder rec(step + 1, store_->at(module().program.ops[0].outputs[0]).shape[0]);
    mpk::run_op(module().program, 0, *store_, StepContext{step, &prompt, &rec});
    naive_->run_op(0, step, prompt);
  }
  // The tasks, in order, on the CPU side only.
  void run_tasks(int64_t step, const std::vector<int64_t>& prompt = {1}) {
    StepRecorder rec(step + 1, 8);
    for (TaskId t = 0; t < static_cast<TaskId>(module().graph.tasks.size()); ++t)
      run_task(prepare_task(module(), t), *store_, StepContext{step, &prompt, &rec});
  }

  // Tensor `id` as the CPU holds it, decoded by the naive side's decoders.
  std::vector<double> cpu(TensorId id) const {
    const TensorBuffer& b = store_->at(id);
    std::vector<double> out(static_cast<size_t>(b.numel));
    for (int64_t i = 0; i < b.numel; ++i) {
      switch (b.dtype) {
        case DType::kBF16: out[i] = naive::bf16_value(static_cast<const uint16_t*>(b.data)[i]); break;
        case DType::kF16: out[i] = naive::f16_value(static_cast<const uint16_t*>(b.data)[i]); break;
        case DType::kF32: out[i] = static_cast<const float*>(b.data)[i]; break;
        case DType::kI32: out[i] = static_cast<const int32_t*>(b.data)[i]; break;
      }
    }
    return out;
  }
  naive::Interpreter& naive() { return *naive_; }
  Module& module() { return ob_.module(); }
  std::vector<int32_t> token_values;

 private:
  OpBench ob_;
  std::map<TensorId, double> scale_;
  std::unique_ptr<TensorStore> store_;
  std::unique_ptr<naive::Interpreter> naive_;
};

// Runs operator 0 on both sides and expects every listed output to agree, exactly when
// `exact`, else as its dtype needs.
inline void expect_op_agrees(NaiveBench& nb, int64_t step, const std::vector<TensorId>& outputs,
                             const std::string& what, bool exact = false,
                             const std::vector<int64_t>& prompt = {1}) {
  nb.start();
  nb.run_op(step, prompt);
  for (TensorId t : outputs)
    EXPECT_TRUE(agrees(nb.cpu(t), nb.naive().at(t).v,
                       exact ? Agreement::kExact : agreement_for(nb.module().program.tensors[t].dtype)))
        << what << ", tensor '" << nb.module().program.tensors[t].name << "' at step " << step;
}

}  // namespace mpk::test
