// The megakernel's dispatch costs on the GPU, through the real runtime with in-kernel
// tracing: a dependency hop between two SMs (a chain of one-task operators placed on
// workers 0 and 1 alternately: start of task i - end of task i-1), and back-to-back
// tasks on one SM (independent one-task operators all on worker 0: start - the end of
// the previous one), each measured quiet and while the other 130 SMs stream a large
// linear's weights (DRAM saturated). Prints the medians over every step but the first.
// Usage: gpu_dispatch_bench [--steps N] [--chain N] [--compile-only]
// (--compile-only: build and compile the four megakernels into the cubin cache, no GPU)
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "codegen/compile.h"
#include "codegen/megakernel.h"
#include "ir/error.h"
#include "ir/verifier.h"
#include "passes/pass_manager.h"
#include "passes/pipeline.h"
#include "runtime/gpu/megakernel_runtime.h"
#include "runtime/weights/weights.h"

namespace {

using namespace mpk;

constexpr int64_t kHidden = 2048;
constexpr int64_t kVocab = 64;
constexpr int64_t kWorkers = 132;
constexpr int64_t kStreamRows = 384;  // rows of the background linear per streaming worker

enum class Shape { kHop, kBackToBack };

// embed -> x0; the measured operators (a chain x_i = x_{i-1} + x0, or independent
// y_i = x0 + x0); with `load`, big = x0 W^T over kStreamRows rows per streaming worker;
// logits = lm_head(last); tokens = argmax(logits).
Module build(Shape shape, int64_t n, bool load) {
  Module m;
  m.name = "dispatch-bench";
  m.attrs = {{"batch", int64_t{1}}, {"vocab", kVocab}, {"max_seq_len", int64_t{4096}}};
  auto tensor = [&](const std::string& name, DType dt, std::vector<int64_t> shape, TensorRole role) {
    return m.program.add_tensor(Tensor{name, dt, std::move(shape), role});
  };
  auto op = [&](const std::string& name, OpKind kind, std::vector<TensorId> in, std::vector<TensorId> out) {
    Operator o;
    o.name = name;
    o.kind = kind;
    o.inputs = std::move(in);
    o.outputs = std::move(out);
    return m.program.add_op(std::move(o));
  };
  const TensorId table = tensor("table", DType::kBF16, {kVocab, kHidden}, TensorRole::kWeight);
  const TensorId tokens = tensor("tokens", DType::kI32, {1}, TensorRole::kInput);
  const TensorId x0 = tensor("x0", DType::kBF16, {1, kHidden}, TensorRole::kActivation);
  op("embed", OpKind::kEmbedding, {table, tokens}, {x0});
  TensorId last = x0;
  for (int64_t i = 0; i < n; ++i) {
    const TensorId y = tensor("x" + std::to_string(i + 1), DType::kBF16, {1, kHidden}, TensorRole::kActivation);
    op("add" + std::to_string(i), OpKind::kResidualAdd, {shape == Shape::kHop ? last : x0, x0}, {y});
    last = y;
  }
  if (load) {
    const int64_t rows = (kWorkers - 2) * kStreamRows;
    const TensorId w = tensor("big.weight", DType::kBF16, {rows, kHidden}, TensorRole::kWeight);
    const TensorId big = tensor("big", DType::kBF16, {1, rows}, TensorRole::kActivation);
    op("big", OpKind::kLinear, {x0, w}, {big});
  }
  const TensorId head = tensor("head", DType::kBF16, {kVocab, kHidden}, TensorRole::kWeight);
  const TensorId logits = tensor("logits", DType::kF32, {1, kVocab}, TensorRole::kOutput);
  op("lm_head", OpKind::kLmHead, {last, head}, {logits});
  op("argmax", OpKind::kArgmax, {logits}, {tokens});
  return m;
}

// Places the measured tasks (worker 0, or 0 and 1 alternately for the hop), the
// background linear on workers 2.., everything else on worker 0 in program order.
void schedule(Module& m, Shape shape) {
  Schedule s;
  s.policy = "dispatch-bench";
  s.workers.assign(kWorkers, {});
  int64_t measured = 0, big = 0;
  for (TaskId t = 0; t < static_cast<TaskId>(m.graph.tasks.size()); ++t) {
    const Operator& op = m.program.ops[m.graph.tasks[t].op];
    if (op.kind == OpKind::kResidualAdd)
      s.workers[shape == Shape::kHop ? measured++ % 2 : 0].push_back(t);
    else if (op.name == "big")
      s.workers[2 + big++ % (kWorkers - 2)].push_back(t);
    else
      s.workers[0].push_back(t);
  }
  m.graph.schedule = std::move(s);
}

struct Figures {
  double gap_us = 0, body_us = 0;
};

// The program decomposed, with its events and schedule, verified and generated (no GPU);
// with `compile`, its megakernel compiled into the cubin cache.
Module prepare(Shape shape, bool load, int64_t chain, bool compile) {
  Module m = build(shape, chain, load);
  PassManager(parse_pipeline("decompose{elementwise-tile=" + std::to_string(kHidden) + ",tile=" +
                             std::to_string(kStreamRows) + ",lm-head-tile=" + std::to_string(kVocab) + "},infer-deps"))
      .run(m);
  schedule(m, shape);
  verify_or_throw(m);
  const Megakernel k = generate_megakernel(m);
  if (compile) compile_megakernel(k.source);
  return m;
}

Figures measure(const Module& m, int64_t steps) {
  GpuMegakernel g(m, random_weights(m, 1));
  GpuRunOptions o;
  o.steps = steps;
  o.trace = true;
  g.run(o);  // warm-up
  const GpuRunResult r = g.run(o);
  std::map<std::pair<int32_t, int32_t>, const abi::TraceRecord*> by_task_step;
  for (const abi::TraceRecord& e : r.trace) by_task_step[{e.task, e.step}] = &e;
  std::vector<TaskId> order;  // the measured tasks in order
  for (TaskId t = 0; t < static_cast<TaskId>(m.graph.tasks.size()); ++t)
    if (m.program.ops[m.graph.tasks[t].op].kind == OpKind::kResidualAdd) order.push_back(t);
  std::vector<double> gaps, bodies;
  for (int32_t step = 1; step < steps; ++step)
    for (size_t i = 0; i < order.size(); ++i) {
      const abi::TraceRecord* e = by_task_step.at({order[i], step});
      bodies.push_back(static_cast<double>(e->end_ns - e->start_ns) * 1e-3);
      if (i > 0) gaps.push_back(static_cast<double>(e->start_ns - by_task_step.at({order[i - 1], step})->end_ns) * 1e-3);
    }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  return {median(gaps), median(bodies)};
}

}  // namespace

int main(int argc, char** argv) {
  int64_t steps = 20, chain = 64;
  bool compile_only = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--compile-only")) compile_only = true;
    if (i + 1 < argc && !std::strcmp(argv[i], "--steps")) steps = std::atoll(argv[++i]);
    if (i + 1 < argc && !std::strcmp(argv[i], "--chain")) chain = std::atoll(argv[++i]);
  }
  try {
    if (steps < 2 || chain < 2) throw Error("--steps and --chain must be at least 2");
    const Module hop = prepare(Shape::kHop, false, chain, compile_only);
    const Module hop_load = prepare(Shape::kHop, true, chain, compile_only);
    const Module b2b = prepare(Shape::kBackToBack, false, chain, compile_only);
    const Module b2b_load = prepare(Shape::kBackToBack, true, chain, compile_only);
    if (compile_only) return 0;
    if (!gpu_available()) throw Error("no CUDA GPU is available (the programs were built and verified)");
    std::printf("gpu_dispatch_bench on %s: medians over %lld steps x %lld tasks (traced)\n",
                gpu_info().name.c_str(), static_cast<long long>(steps - 1), static_cast<long long>(chain));
    std::printf("%-34s %12s %16s\n", "", "quiet", "DRAM saturated");
    const Figures hq = measure(hop, steps), hl = measure(hop_load, steps);
    const Figures bq = measure(b2b, steps), bl = measure(b2b_load, steps);
    std::printf("%-34s %9.3f us %13.3f us\n", "dependency hop (SM a -> SM b)", hq.gap_us, hl.gap_us);
    std::printf("%-34s %9.3f us %13.3f us\n", "back-to-back tasks on one SM", bq.gap_us, bl.gap_us);
    std::printf("%-34s %9.3f us %13.3f us\n", "task body (residual_add, 2048)", bq.body_us, bl.body_us);
  } catch (const Error& e) {
    std::fprintf(stderr, "gpu_dispatch_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
