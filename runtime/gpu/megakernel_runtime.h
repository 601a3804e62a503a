// The GPU host runtime: generates and compiles (or loads from the cache) the megakernel
// of a scheduled module, allocates weights, KV cache, activations and event counters
// with plain device allocations, resolves the task table's pointers, and runs decode:
// ONE persistent launch per run() performs every step on device (embedding, layers,
// LM head, argmax, the token fed back); the tokens are copied back at the end, or, when
// asked, reach the host step by step while the kernel runs, which stops at EOS.
// run_per_op() runs the same task bodies as one launch per operator, a whole step
// captured in one CUDA graph and replayed per token: the kernel-per-operator baseline.
// Prefill (docs/megakernel.md "Prefill"): a GpuMegakernel of the model's prefill chunk,
// made to share a decode GpuMegakernel's KV caches and weights, fills the caches with a
// prompt C positions per step; run_prefilled() launches it and then the decode from step
// E = P - 1, back to back on one stream.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "codegen/compile.h"
#include "runtime/device/abi.cuh"
#include "codegen/megakernel.h"
#include "ir/module.h"
#include "runtime/gpu/cuda_util.h"
#include "runtime/weights/weights.h"

namespace mpk {

// One rank of a tensor-parallel group (runtime/gpu/tp_megakernel.h); the defaults are the
// one GPU of an unsharded run: device 0, plain allocations.
struct GpuRank {
  int device = 0;
  int rank = 0;
  int ranks = 1;
  // The rank's symmetric arena (runtime/gpu/tp_group.h), laid out by tp_arena_layout, and
  // [q]: rank q's arena address minus this one's, as this device sees it. null: one rank.
  void* arena = nullptr;
  std::vector<int64_t> peer_delta;
};

struct GpuOptions {
  MegakernelOptions codegen;
  CompileOptions compile;
  double watchdog_s = 2.0;  // longest event wait before the kernel stops itself
  GpuRank rank;
};

// Where the event counters and the tensors that other ranks read (ir/ops/tensor_parallel.h,
// symmetric_tensors) lie in each rank's symmetric arena: the same on every rank.
struct TpArenaLayout {
  size_t counters = 0;                // num_events x 8 bytes
  std::vector<int64_t> tensor_offset;  // per tensor; -1: not symmetric
  size_t bytes = 0;
};
TpArenaLayout tp_arena_layout(const Module& scheduled);

struct GpuRunOptions {
  int64_t steps = 16;           // the run ends after step steps - 1 (step s at position s)
  // The launch's first step (< steps): a decode after a prefill starts at E = P - 1 (reading
  // prompt token E), or a run goes on where an earlier one of this megakernel ended (the KV
  // caches and the last step's token stay on the device). Event counters still count the
  // launch's steps from 0; only positions move. Megakernel only.
  int64_t first_step = 0;
  std::vector<int64_t> prompt = {1};
  int64_t prompt_rows = 1;      // 1, or the batch: one row per batch row (run_common.h, prompt_token)
  bool trace = false;           // record every task execution (megakernel only)
  int64_t trace_capacity = 0;   // records per worker; 0: steps * the longest queue
  bool logits_history = false;  // keep every step's logits (lm_head writes them)
  // Megakernel only: each step's tokens [row], in step order (steps first_step ...), while
  // the kernel runs (mapped host memory), on the calling thread; and the stop: the kernel
  // ends after the first step from first_generated on at which every row has produced one
  // of stop_ids (no later step runs).
  std::function<void(int64_t step, const std::vector<int32_t>& tokens)> on_step;
  std::vector<int32_t> stop_ids;
  int64_t first_generated = 0;
  // Megakernel only: called once the run state (the event counters among it) is reset on
  // the device, right before the launch: a tensor-parallel run's barrier, so that no rank
  // reads a peer's counters before that peer reset them.
  std::function<void()> before_launch;
};

// A run's steps are first_step .. steps - 1 (a prefill's: its chunk steps 0 .. steps - 1).
struct GpuRunResult {
  int64_t steps = 0;                         // the run ended after step steps - 1
  int64_t first_step = 0;                    // the launch's first step (GpuRunOptions)
  int64_t batch = 0;
  int64_t stopped_at = -1;                   // the step the kernel stopped after, or -1
  std::vector<std::vector<int32_t>> tokens;  // [step][row]: the argmax of each step; -1
                                             // before first_step; none for a prefill
  std::vector<float> logits;                 // the last step's logits [batch, vocab]
  std::vector<float> logits_history;         // [steps - first_step][batch][vocab] when asked
  double kernel_ms = 0;                      // device time of the launch(es), CUDA events
  std::vector<abi::TraceRecord> trace;       // every recorded task execution, at its step
                                             // (from first_step; tensor parallel: rank 0's,
                                             // on its GPU's clock)
  std::vector<std::vector<abi::TraceRecord>> peer_traces;  // tensor parallel: ranks 1.., each on
                                                           // its own GPU's clock
  uint64_t trace_overflow = 0;               // executions not recorded (buffer full; all ranks)
};

// A prefill then a decode (run_prefilled): the prefill over the prompt's first E = P - 1
// positions, and the decode from step E.
struct GpuPrefillResult {
  GpuRunResult prefill;         // the chunk's launch: ceil(E / C) steps, its trace; no tokens
  GpuRunResult decode;          // as run() with first_step E
  double first_token_ms = 0;    // host time from the call to the first generated token's
                                // arrival (polled every 50 us)
  double gap_us = -1;           // traced: the prefill's last task end to the decode's first
                                // task start, on the GPU's clock (-1 untraced)
};

class GpuMegakernel {
 public:
  // Throws mpk::Error for no GPU, a GPU that is not sm_90, more workers than SMs, a
  // compile failure, or weights that do not match the module.
  GpuMegakernel(const Module& scheduled, const Weights& weights, const GpuOptions& options = {});
  // A prefill chunk of `decode`'s model (docs/ir.md "Prefill chunks": prefill-chunk, then
  // decode's passes): its KV caches, and every weight that decode keeps on the device, are
  // decode's tensors of the same names, not allocated or uploaded again; the weights its
  // weight stream reads are packed again from `weights`, in its own tiling (a second image
  // as large as the streamed weights). It runs on decode's device and stream, one rank and
  // batch 1. `decode` must outlive it. Throws as above, and for a module that is not a
  // prefill chunk or whose caches decode lacks.
  GpuMegakernel(const Module& chunk, const Weights& weights, GpuMegakernel& decode, const GpuOptions& options = {});
  ~GpuMegakernel();
  GpuMegakernel(const GpuMegakernel&) = delete;
  GpuMegakernel& operator=(const GpuMegakernel&) = delete;

  // One persistent launch for o.steps decode steps. Throws mpk::Error with the worker,
  // task, step and event when the watchdog stopped the kernel. On the rank's device (its
  // thread's current device is set).
  GpuRunResult run(const GpuRunOptions& o);
  // The per-operator baseline (no tracing; one rank only).
  GpuRunResult run_per_op(const GpuRunOptions& o);
  // A prefill chunk's launch: the first E = min(P - 1, o.steps) positions of o.prompt into
  // the shared KV caches, ceil(E / C) steps (o.trace and o.trace_capacity apply; nothing
  // else). E = 0 launches nothing.
  GpuRunResult prefill(const GpuRunOptions& o);
  // `chunk` (made to share this megakernel's buffers) over o.prompt, then this module
  // from step E = min(P - 1, o.steps) to o.steps (o.first_step is ignored): two launches
  // back to back on one stream, the host waiting for neither in between (docs/megakernel.md
  // "Prefill"). Throws as run() does, naming the launch that failed.
  GpuPrefillResult run_prefilled(GpuMegakernel& chunk, const GpuRunOptions& o);
  // A tensor's bytes as the device holds them now (the KV caches after a run, say).
  // Throws for an unknown name or a weight only the weight stream holds.
  std::vector<char> tensor_bytes(const std::string& name) const;

  const Module& module() const;
  const Megakernel& kernel() const;
  const CompiledKernel& compiled() const;
  const GpuInfo& info() const;
  int64_t num_launches_per_op() const;  // kernel launches per step in per-op mode

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};


// Bytes of weights one decode step streams at batch 1: every weight tensor read by an
// operator other than the embedding (an embedding table also read by a tied lm_head
// counts once). The bandwidth floor is this over the copy bandwidth.
int64_t weight_bytes_per_token(const Module& m);

}  // namespace mpk
