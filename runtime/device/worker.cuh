// The persistent worker and the per-operator baseline kernel. The generated source
// defines a dispatch functor (a switch over the instantiation index of each task, into
// the templated task bodies) and instantiates the kernels with MPK_DEFINE_KERNELS.
//
// A worker block runs its queue of descriptors for every decode step in order, with
// four roles, so that no per-task bookkeeping sits between two task bodies and nothing
// waits behind a memory access it does not need:
//   - the dispatch warp copies descriptors into kDescSlots shared-memory slots ahead
//     of the bodies (bulk copies), asks L2 for the inputs a task reads that earlier
//     steps wrote (Dispatch::prefetch: the attention's cache rows), waits on each task's
//     events (one lane per event, acquire, watchdog) and then releases the task to the
//     bodies (its `go` barrier); it waits for task n+1 while the bodies run task n;
//   - the body warps (kThreads threads) wait for `go`, run the body, synchronize and
//     arrive on the task's `done` barrier;
//   - the completion warp waits for `done`, triggers the task's events (one release
//     fence, relaxed adds shared by the lanes), writes its trace records, and frees its
//     descriptor slot; after the argmax_reduce task it streams the step's tokens to the
//     host and stops the kernel at EOS (runtime/device/publish.cuh);
//   - one thread of the stream warp keeps the weight ring full from the worker's chunk
//     list (runtime/device/stream.cuh).
// Counters grow across steps and are never reset inside a launch; they count launch
// steps from 0, whatever step of the module the launch starts at (KernelParams::
// first_step, positions.cuh). With tracing compiled
// in (kTrace), body thread 0 stamps start and end (%globaltimer) into shared memory and
// the completion warp writes {task, step, worker, SM, wait-begin, start, end} per task
// (wait-begin is the end of the worker's previous task; the end is stamped before the
// task's events are triggered; the step is the module's, first_step + the launch's);
// records past the capacity are counted, never written.
//
// Per-op kernel: grid = the tasks of one operator, each block runs one task for the
// step held in step_counter, with no event waits (launch order is the dependency);
// mpk_step_advance moves to the next step. The host captures one step in a CUDA graph.
#pragma once

#include <cstdint>

#include "runtime/device/config.cuh"
#include "runtime/device/common.cuh"
#include "runtime/device/context.cuh"
#include "runtime/device/events.cuh"
#include "runtime/device/positions.cuh"
#include "runtime/device/publish.cuh"
#include "runtime/device/stream.cuh"

namespace mpk {
namespace dev {

// The block's static shared memory. Descriptor slot s holds the tasks n with
// n % kDescSlots == s; each barrier of a slot completes once per such task, in phase
// parity (n / kDescSlots) & 1.
struct WorkerShared {
  RingBarriers ring;
  uint64_t desc_full[kDescSlots];  // the descriptor landed
  uint64_t go[kDescSlots];         // dispatch -> bodies: the task may start
  uint64_t done[kDescSlots];       // bodies -> completion warp: the body finished
  uint64_t freed[kDescSlots];      // completion warp -> dispatch: the slot may be refilled
  alignas(16) TaskDesc desc[kDescSlots];
  uint64_t t_start[kDescSlots];
  uint64_t t_end[kDescSlots];
  int32_t stop_after;  // -1; after an abort, the task whose `go` means "stop"
  int32_t completed;   // tasks the completion warp has finished
  uint32_t held[kPoolSlots];  // the stream thread's claims for a later step (StreamIssuer)

  __device__ void init() {
    ring.init();
    for (int s = 0; s < kDescSlots; ++s) {
      mbar_init(&desc_full[s], 1);
      mbar_init(&go[s], 1);
      mbar_init(&done[s], kThreads);
      mbar_init(&freed[s], 32);
    }
    stop_after = -1;
    completed = 0;
    for (int k = 0; k < kPoolSlots; ++k) held[k] = kNoClaim;
    mbar_fence_init();
  }
  __device__ int32_t stopped_at() const { return *reinterpret_cast<const volatile int32_t*>(&stop_after); }
  // After an abort, once every task the bodies started is complete: nothing more will
  // consume a weight chunk.
  __device__ bool drained() const {
    const int32_t stop = stopped_at();
    return stop >= 0 && *reinterpret_cast<const volatile int32_t*>(&completed) == stop;
  }
};

// The tasks a block runs: `len` descriptors from `descs`, for `steps` steps from `step0`.
struct WorkQueue {
  const TaskDesc* descs;
  int32_t len;
  int32_t steps;
  int32_t step0;

  __device__ int32_t total() const { return len * steps; }
  __device__ int32_t step_of(int32_t n) const { return step0 + n / len; }
  __device__ const TaskDesc* desc_of(int32_t n) const { return descs + n % len; }
};

// Dynamic shared memory: the ring (1024-byte aligned), then the scratch. The host adds
// 1024 bytes of slack for the alignment.
__device__ __forceinline__ unsigned char* ring_base(unsigned char* dyn) {
  const uint32_t a = smem_addr(dyn);
  return dyn + ((1024u - (a & 1023u)) & 1023u);
}

template <bool kTrace, class Dispatch>
__device__ __forceinline__ void run_bodies(const KernelParams& p, WorkerShared& sh, const WorkQueue& q,
                                           unsigned char* ring) {
  BodyStream stream{ring, &sh.ring, 0};
  TaskCtx ctx{&p, 0, ring + static_cast<size_t>(kStages) * kSlotBytes, &stream};
  Dispatch dispatch;
#pragma unroll 1
  for (int32_t n = 0; n < q.total(); ++n) {
    const int s = n % kDescSlots;
    mbar_wait(&sh.go[s], (n / kDescSlots) & 1u);
    if (sh.stopped_at() == n) return;
    mbar_wait(&sh.desc_full[s], (n / kDescSlots) & 1u);  // each thread acquires the copy itself
    ctx.step = q.step_of(n);
    if (kTrace && threadIdx.x == 0) sh.t_start[s] = global_timer_ns();
    dispatch(sh.desc[s], ctx);
    body_sync();
    if (kTrace && threadIdx.x == 0) sh.t_end[s] = global_timer_ns();
    mbar_arrive(&sh.done[s]);  // every thread: its reads of the descriptor come before the slot's refill
  }
}

// The dispatch warp. Lane 0 requests descriptors up to kDescSlots - 1 tasks ahead, into
// slots the stream warp has freed; every lane takes part in the L2 prefetches and the
// event waits.
template <class Dispatch>
__device__ __forceinline__ void dispatch_tasks(const KernelParams& p, WorkerShared& sh, const WorkQueue& q,
                                               int32_t worker, bool events) {
  const int lane = threadIdx.x & 31;
  const int32_t total = q.total();
  int32_t fetched = 0;
#pragma unroll 1
  for (int32_t n = 0; n < total; ++n) {
    if (lane == 0) {
      while (fetched < total && fetched < n + kDescSlots) {
        const int s = fetched % kDescSlots;
        const uint32_t use = static_cast<uint32_t>(fetched / kDescSlots);
        if (use > 0) {
          if (fetched == n)
            mbar_wait(&sh.freed[s], (use - 1) & 1u);
          else if (!mbar_test(&sh.freed[s], (use - 1) & 1u))
            break;
        }
        mbar_expect_tx(&sh.desc_full[s], sizeof(TaskDesc));
        bulk_copy(&sh.desc[s], q.desc_of(fetched), sizeof(TaskDesc), &sh.desc_full[s]);
        ++fetched;
      }
    }
    __syncwarp();
    const int s = n % kDescSlots;
    mbar_wait(&sh.desc_full[s], (n / kDescSlots) & 1u);
    if (events && !wait_events(p, sh.desc[s], q.step_of(n), worker,
                               [&] { Dispatch::prefetch(sh.desc[s], step_first_pos(p, q.step_of(n)), lane); })) {
      if (lane == 0) {
        sh.stop_after = n;
        mbar_arrive(&sh.go[s]);
        // No descriptor copy may land after the block is gone.
        for (int32_t m = n + 1; m < fetched; ++m) mbar_wait(&sh.desc_full[m % kDescSlots], (m / kDescSlots) & 1u);
      }
      __syncwarp();
      return;
    }
    if (lane == 0) mbar_arrive(&sh.go[s]);
  }
}

// The completion warp: completes tasks in order.
template <bool kTrace>
__device__ __forceinline__ void complete_tasks(const KernelParams& p, WorkerShared& sh, const WorkQueue& q,
                                               int32_t worker, bool events) {
  const int lane = threadIdx.x & 31;
  const int32_t sm = kTrace ? sm_id() : 0;
  TraceRecord* trace = kTrace ? p.trace + static_cast<int64_t>(worker) * p.trace_capacity : nullptr;
  uint32_t trace_n = 0;
  uint64_t t_free = kTrace ? global_timer_ns() : 0;
  uint32_t done_rows = 0;  // publishing: the rows that produced a stop token
#pragma unroll 1
  for (int32_t n = 0; n < q.total(); ++n) {
    const int s = n % kDescSlots;
    bool stopped = false;
    while (!mbar_try_wait(&sh.done[s], (n / kDescSlots) & 1u))
      if ((stopped = sh.stopped_at() == n)) break;
    if (stopped) break;
    const TaskDesc& d = sh.desc[s];
    const bool publish = events && d.task == p.publish_task;
    const bool stop = publish && stops_after(p, q.step_of(n), done_rows);
    if (events && !stop) trigger_events(p, d);
    if (publish) publish_step(p, q.step_of(n), stop);
    if (kTrace && lane == 0) {
      const int32_t step = p.first_step + q.step_of(n);  // the module's step, not the launch's
      for (int32_t m = 0; m < d.members; ++m) {
        if (trace_n < static_cast<uint32_t>(p.trace_capacity))
          trace[trace_n] = TraceRecord{m == 0 ? d.task : d.member[m - 1], step, worker, sm, t_free, sh.t_start[s],
                                       sh.t_end[s]};
        ++trace_n;
      }
      t_free = sh.t_end[s];
    }
    __syncwarp();
    mbar_arrive(&sh.freed[s]);  // every lane read the descriptor
    if (lane == 0) *reinterpret_cast<volatile int32_t*>(&sh.completed) = n + 1;
  }
  if (kTrace && lane == 0) p.trace_count[worker] = trace_n;
}

// One worker block over `q`, streaming `chunks` (its `held` set here); `events`: wait on
// and trigger the tasks' events (off in per-op mode).
template <bool kTrace, class Dispatch>
__device__ __forceinline__ void run_worker(const KernelParams& p, const WorkQueue& q, ChunkList chunks,
                                           int32_t worker, bool events) {
  extern __shared__ __align__(128) unsigned char dyn_smem[];
  __shared__ WorkerShared sh;
  if (threadIdx.x == 0) sh.init();
  __syncthreads();
  unsigned char* ring = ring_base(dyn_smem);
  const int warp = threadIdx.x >> 5;
  if (warp < kWarps) {
    run_bodies<kTrace, Dispatch>(p, sh, q, ring);
  } else if (warp == kStreamWarp) {
    if ((threadIdx.x & 31) == 0) {
      chunks.held = sh.held;
      auto stop = [&] { return sh.drained(); };
      StreamIssuer<decltype(stop)>{ring, sh.ring, stop}.run(chunks);
    }
    __syncwarp();
  } else if (warp == kDispatchWarp) {
    dispatch_tasks<Dispatch>(p, sh, q, worker, events);
  } else {
    complete_tasks<kTrace>(p, sh, q, worker, events);
  }
}

template <bool kTrace, class Dispatch>
__device__ __forceinline__ void megakernel_worker(const KernelParams& p) {
  const int32_t w = blockIdx.x;
  const int32_t q0 = p.queue_offsets[w], c0 = p.chunk_offsets[w];
  const WorkQueue q{p.tasks + q0, p.queue_offsets[w + 1] - q0, p.num_steps, 0};
  if (q.len <= 0) return;
  run_worker<kTrace, Dispatch>(p, q,
                               ChunkList{p.worker_chunks + c0, p.chunk_offsets[w + 1] - c0, p.num_steps, 0, p.pools,
                                         p.task_chunks, p.pool_counters, nullptr},
                               w, true);
}

template <class Dispatch>
__device__ __forceinline__ void per_op_task(const KernelParams& p, const int32_t* op_tasks) {
  const TaskDesc* d = p.tasks + op_tasks[blockIdx.x];
  const WorkQueue q{d, 1, 1, ld_cg_i32(p.step_counter)};
  run_worker<false, Dispatch>(
      p, q,
      ChunkList{p.task_chunks + d->chunk_begin, d->chunk_count, 1, q.step0, p.pools, p.task_chunks, p.pool_counters,
                nullptr},
      blockIdx.x, false);
}

}  // namespace dev
}  // namespace mpk

// Defines the kernels the host runtime looks up by name, around a dispatch functor type.
#define MPK_DEFINE_KERNELS(DISPATCH)                                                          \
  extern "C" __global__ void __launch_bounds__(mpk::dev::kBlockThreads, 1)                           \
      mpk_megakernel(const __grid_constant__ mpk::dev::KernelParams p) {                      \
    mpk::dev::megakernel_worker<false, DISPATCH>(p);                                          \
  }                                                                                           \
  extern "C" __global__ void __launch_bounds__(mpk::dev::kBlockThreads, 1)                           \
      mpk_megakernel_traced(const __grid_constant__ mpk::dev::KernelParams p) {               \
    mpk::dev::megakernel_worker<true, DISPATCH>(p);                                           \
  }                                                                                           \
  extern "C" __global__ void __launch_bounds__(mpk::dev::kBlockThreads, 1)                           \
      mpk_per_op(const __grid_constant__ mpk::dev::KernelParams p, const int32_t* op_tasks) { \
    mpk::dev::per_op_task<DISPATCH>(p, op_tasks);                                             \
  }                                                                                           \
  extern "C" __global__ void mpk_step_advance(int32_t* step_counter) {                        \
    if (threadIdx.x == 0) *step_counter += 1;                                                 \
  }                                                                                           \
  extern "C" __global__ void mpk_pack_stream(const mpk::dev::PackBox* boxes, int32_t count) { \
    mpk::dev::pack_boxes(boxes, count);                                                       \
  }
