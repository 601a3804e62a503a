// The persistent worker loop and the per-operator baseline kernel. The generated source
// defines a dispatch functor (a switch over the instantiation index of each task, into
// the templated task bodies) and instantiates the kernels with MPK_DEFINE_KERNELS.
//
// Megakernel: one block per SM, block w runs worker w's list for every decode step in
// order: fill the weight stream ahead (the producer thread), wait on the task's events
// (warp 0, acquire, watchdog), run the body, synchronize, trigger the task's events
// (the last warp, release). Counters grow across steps and are never reset inside a
// launch. With tracing compiled in (kTrace), the producer thread records wait-begin,
// start and end per task into the worker's trace buffer; records past its capacity are
// counted, never written.
//
// Per-op kernel: grid = the tasks of one operator, each block runs one task for the
// step held in step_counter, with no event waits (launch order is the dependency);
// mpk_step_advance moves to the next step. The host captures one step in a CUDA graph.
#pragma once

#include <cstdint>

#include "runtime/device/abi.cuh"
#include "runtime/device/common.cuh"
#include "runtime/device/context.cuh"
#include "runtime/device/events.cuh"
#include "runtime/device/stream.cuh"

namespace mpk {
namespace dev {

struct SharedState {
  uint64_t full[kStages];
  int32_t abort;
};

// Dynamic shared memory: the ring (1024-byte aligned), then
// the scratch. The host adds 1024 bytes of slack for the alignment.
__device__ __forceinline__ unsigned char* ring_base(unsigned char* dyn) {
  const uint32_t a = smem_addr(dyn);
  return dyn + ((1024u - (a & 1023u)) & 1023u);
}
__device__ __forceinline__ unsigned char* scratch_base(unsigned char* dyn) {
  return ring_base(dyn) + static_cast<size_t>(kStages) * kSlotBytes;
}

template <bool kTrace, class Dispatch>
__device__ __forceinline__ void worker_loop(const KernelParams& p) {
  extern __shared__ __align__(128) unsigned char dyn_smem[];
  __shared__ SharedState sh;
  const int32_t worker = blockIdx.x;
  const int32_t q0 = p.queue_offsets[worker];
  const int32_t qlen = p.queue_offsets[worker + 1] - q0;
  const int32_t* queue = p.queue_items + q0;

  WeightStream stream;
  stream.init(ring_base(dyn_smem), sh.full);
  TaskCtx ctx{&p, 0, scratch_base(dyn_smem), &stream, queue, qlen, p.num_steps};
  if (threadIdx.x == 0) sh.abort = 0;
  // Tracing runs in the producer thread (kProducer), which does no row work, so that
  // reading %globaltimer stays off the waits and the arithmetic. A task's wait begins
  // when the worker finished its previous task.
  const bool tracer = kTrace && threadIdx.x == kProducer;
  uint32_t trace_n = 0;
  const int32_t sm = tracer ? sm_id() : 0;
  TraceRecord* trace = kTrace ? p.trace + static_cast<int64_t>(worker) * p.trace_capacity : nullptr;
  uint64_t t_free = tracer ? global_timer_ns() : 0;
  Dispatch dispatch;

  if (qlen > 0) {
#pragma unroll 1
    for (int32_t step = 0; step < p.num_steps; ++step) {
      ctx.step = step;
#pragma unroll 1
      for (int32_t i = 0; i < qlen; ++i) {
        const TaskDesc& d = p.tasks[queue[i]];
        if (threadIdx.x == kProducer) stream.fill(p.tasks, queue, qlen, p.num_steps);
        if (threadIdx.x < 32 && !wait_events(p, d, step, worker) && threadIdx.x == 0) sh.abort = 1;
        __syncthreads();
        if (sh.abort) goto done;
        const uint64_t t_start = tracer ? global_timer_ns() : 0;
        dispatch(d, ctx);
        __syncthreads();
        // The last warp triggers the task's events; the tracer reads the end time
        // before them, so a consumer never starts before its producer's recorded end.
        if (threadIdx.x >= kThreads - 32) {
          const uint64_t t_end = tracer ? global_timer_ns() : 0;
          __syncwarp();
          trigger_events(p, d);
          if (tracer) {
            // A linear group records each of its member tasks (a member's descriptor
            // index is its TaskId).
            const int32_t members = d.s_groups > 0 && d.arg[4] > 1 ? d.arg[4] : 1;
            for (int32_t m = 0; m < members; ++m) {
              const int32_t task = m == 0 ? d.task : d.arg[m];
              if (trace_n < static_cast<uint32_t>(p.trace_capacity))
                trace[trace_n] = TraceRecord{task, step, worker, sm, t_free, t_start, t_end};
              ++trace_n;
            }
            t_free = t_end;
          }
        }
      }
    }
  }
done:
  if (threadIdx.x == kProducer) stream.drain();
  if (tracer) p.trace_count[worker] = trace_n;
  __syncthreads();
}

template <class Dispatch>
__device__ __forceinline__ void per_op_task(const KernelParams& p, const int32_t* op_tasks) {
  extern __shared__ __align__(128) unsigned char dyn_smem[];
  __shared__ SharedState sh;
  const int32_t* queue = op_tasks + blockIdx.x;
  const int32_t step = ld_cg_i32(p.step_counter);
  WeightStream stream;
  stream.init(ring_base(dyn_smem), sh.full);
  // The stream of a one-task queue run for one step: exactly this task's chunks.
  TaskCtx ctx{&p, step, scratch_base(dyn_smem), &stream, queue, 1, 1};
  if (threadIdx.x == kProducer) stream.fill(p.tasks, queue, 1, 1);
  __syncthreads();
  Dispatch dispatch;
  dispatch(p.tasks[queue[0]], ctx);
  __syncthreads();
}

}  // namespace dev
}  // namespace mpk

// Defines the kernels the host runtime looks up by name, around a dispatch functor type.
#define MPK_DEFINE_KERNELS(DISPATCH)                                                      \
  extern "C" __global__ void __launch_bounds__(MPK_THREADS, 1)                            \
      mpk_megakernel(const __grid_constant__ mpk::dev::KernelParams p) {                  \
    mpk::dev::worker_loop<false, DISPATCH>(p);                                            \
  }                                                                                       \
  extern "C" __global__ void __launch_bounds__(MPK_THREADS, 1)                            \
      mpk_megakernel_traced(const __grid_constant__ mpk::dev::KernelParams p) {           \
    mpk::dev::worker_loop<true, DISPATCH>(p);                                             \
  }                                                                                       \
  extern "C" __global__ void __launch_bounds__(MPK_THREADS, 1)                            \
      mpk_per_op(const __grid_constant__ mpk::dev::KernelParams p, const int32_t* op_tasks) { \
    mpk::dev::per_op_task<DISPATCH>(p, op_tasks);                                         \
  }                                                                                       \
  extern "C" __global__ void mpk_step_advance(int32_t* step_counter) {                    \
    if (threadIdx.x == 0) *step_counter += 1;                                             \
  }                                                                                       \
  extern "C" __global__ void mpk_pack_stream(const mpk::dev::PackBox* boxes, int32_t count) { \
    mpk::dev::pack_boxes(boxes, count);                                                   \
  }
