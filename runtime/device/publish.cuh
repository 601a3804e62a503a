// Streaming the tokens to the host while the kernel runs, and stopping at EOS. The
// completion warp of the worker that runs the argmax_reduce task (KernelParams::
// publish_task) sees every step's tokens in order: once the task's body is done it
// decides whether every batch row has produced a stop token (from first_generated on);
// if not, it triggers the task's events as any task does and then copies the step's
// tokens into mapped host memory and publishes the step count (a system-scope fence in
// between), off the critical path; if so, it publishes the tokens, records the step and
// raises the abort flag with kStopAbort instead of triggering: no task of a later step can
// start (they all wait on this step's token), every wait gives up and the kernel ends.
#pragma once

#include <cstdint>

#include "runtime/device/common.cuh"
#include "runtime/device/config.cuh"

namespace mpk {
namespace dev {

constexpr uint32_t kStopAbort = 2;  // abort_flag: stopped at a stop token, not an error

// Every lane: whether the kernel stops after `step`; `done_rows` (lane 0's) keeps the rows
// that produced a stop token so far.
__device__ __forceinline__ bool stops_after(const KernelParams& p, int32_t step, uint32_t& done_rows) {
  bool stop = false;
  if ((threadIdx.x & 31) == 0 && p.stop_count > 0 && step >= p.first_generated) {
    for (int32_t b = 0; b < p.batch; ++b) {
      const int32_t t = ld_cg_i32(&p.token_history[static_cast<int64_t>(step) * p.batch + b]);
      for (int32_t i = 0; i < p.stop_count; ++i)
        if (p.stop_ids[i] == t) done_rows |= 1u << b;
    }
    stop = done_rows == (p.batch >= 32 ? ~0u : (1u << p.batch) - 1u);
  }
  return __shfl_sync(0xffffffffu, stop, 0);
}

// Lane 0: the step's tokens to the host, then the count; with `stop`, then the stop.
__device__ __forceinline__ void publish_step(const KernelParams& p, int32_t step, bool stop) {
  if ((threadIdx.x & 31) != 0) return;
  for (int32_t b = 0; b < p.batch; ++b) {
    const int64_t i = static_cast<int64_t>(step) * p.batch + b;
    p.host_tokens[i] = ld_cg_i32(&p.token_history[i]);
  }
  __threadfence_system();
  *reinterpret_cast<volatile uint32_t*>(p.host_steps) = static_cast<uint32_t>(step + 1);
  if (!stop) return;
  *p.stopped_at = step;
  __threadfence();
  atomicExch(p.abort_flag, kStopAbort);
}

}  // namespace dev
}  // namespace mpk
