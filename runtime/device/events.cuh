// Events and the watchdog. An event is a 64-bit counter in global memory. A producer
// block triggers it after its writes: __syncthreads(), then thread 0 fences at GPU
// scope and adds 1 with release semantics. A consumer's thread 0 spins with acquire
// loads until counter >= target * (step + 1 - distance), then the block synchronizes.
// Every spin reads %globaltimer: past the watchdog timeout it records who waited on
// what in the error record, raises the abort flag that every other spin polls, and
// gives up, so a wait that can never finish stops the kernel instead of hanging it.
#pragma once

#include <cstdint>

#include "runtime/device/abi.cuh"
#include "runtime/device/common.cuh"

namespace mpk {
namespace dev {

__device__ __forceinline__ unsigned long long ld_acquire_u64(const unsigned long long* p) {
  unsigned long long v;
  asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ uint32_t ld_relaxed_u32(const uint32_t* p) {
  uint32_t v;
  asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ void red_release_add(unsigned long long* p, unsigned long long v) {
  asm volatile("red.release.gpu.global.add.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

// Thread 0 only. Waits for every event `d` waits on at `step`. Returns false when the
// wait was abandoned (watchdog expiry here, or an abort raised elsewhere).
__device__ __noinline__ bool wait_events(const KernelParams& p, const TaskDesc& d, int32_t step,
                                         int32_t worker) {
  for (int32_t i = 0; i < d.wait_count; ++i) {
    const WaitEntry w = p.waits[d.wait_begin + i];
    const int64_t k = static_cast<int64_t>(step) + 1 - w.distance;
    if (k <= 0) continue;
    const unsigned long long need = static_cast<unsigned long long>(w.target) * k;
    const unsigned long long* ctr = &p.counters[w.event];
    unsigned long long v = ld_acquire_u64(ctr);
    if (v >= need) continue;
    const uint64_t t0 = global_timer_ns();
    while (true) {
      v = ld_acquire_u64(ctr);
      if (v >= need) break;
      if (ld_relaxed_u32(p.abort_flag) != 0) return false;
      const uint64_t waited = global_timer_ns() - t0;
      if (waited > p.watchdog_ns) {
        if (atomicCAS(&p.error->flag, 0u, 1u) == 0u) {
          p.error->worker = worker;
          p.error->task = d.task;
          p.error->step = step;
          p.error->event = w.event;
          p.error->sm = sm_id();
          p.error->counter = v;
          p.error->needed = need;
          p.error->waited_ns = waited;
          __threadfence();
        }
        atomicExch(p.abort_flag, 1u);
        return false;
      }
    }
  }
  return true;
}

// Thread 0 only, after the block's writes are done and the block synchronized: the
// release orders them (bar.sync made them visible to thread 0) before the increment.
__device__ __forceinline__ void trigger_events(const KernelParams& p, const TaskDesc& d) {
  for (int32_t i = 0; i < d.trig_count; ++i) red_release_add(&p.counters[p.triggers[d.trig_begin + i]], 1ull);
}

}  // namespace dev
}  // namespace mpk
