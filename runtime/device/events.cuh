// Events and the watchdog. An event is a 64-bit counter in global memory. When a task's
// body is done, the completion warp triggers its events: one release fence, then a
// relaxed add of 1 per event. The dispatch warp waits for the next task's events (one
// lane per event, acquire loads) until counter >= target * (step + 1 - distance). Spins read %globaltimer: past the watchdog
// timeout a spin records who waited on what in the error record, raises the abort flag
// that every other spin polls, and gives up, so a wait that can never finish stops the
// kernel instead of hanging it.
#pragma once

#include <cstdint>

#include "runtime/device/config.cuh"
#include "runtime/device/common.cuh"
#include "runtime/device/remote.cuh"

namespace mpk {
namespace dev {

__device__ __forceinline__ uint32_t ld_relaxed_u32(const uint32_t* p) {
  uint32_t v;
  asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ void fence_acq_rel_gpu() { asm volatile("fence.acq_rel.gpu;" ::: "memory"); }

__device__ __forceinline__ void red_relaxed_add(unsigned long long* p, unsigned long long v) {
  asm volatile("red.relaxed.gpu.global.add.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

// The task's wait i (the inline ones first).
__device__ __forceinline__ WaitEntry wait_entry(const KernelParams& p, const TaskDesc& d, int32_t i) {
  return i < kInlineWaits ? d.wait[i] : p.waits[d.wait_begin + i - kInlineWaits];
}

__device__ __forceinline__ unsigned long long ld_acquire_u64(const unsigned long long* p) {
  unsigned long long v;
  asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

// The counter a wait reads: this rank's, or a peer rank's at system scope (remote.cuh).
struct WaitCounter {
  const unsigned long long* ptr;
  bool peer;
  __device__ __forceinline__ unsigned long long load() const { return peer ? ld_acquire_sys_u64(ptr) : ld_acquire_u64(ptr); }
};
__device__ __forceinline__ WaitCounter wait_counter(const KernelParams& p, const WaitEntry& w) {
  const unsigned long long* own = &p.counters[w.event];
  if (w.peer == 0) return {own, false};
  return {reinterpret_cast<const unsigned long long*>(reinterpret_cast<const char*>(own) + p.peer_delta[w.peer - 1]),
          true};
}

// The dispatch warp: lane i waits for the task's waits i, i + 32, ... at `step`, so that
// a task with several inputs pays one round trip, not one per event. A spin is one
// acquire load per iteration; the abort flag and the watchdog are looked at every 64
// (a separate fence would cost ~0.4 us per task, measured). Returns false (on every
// lane) when the wait was abandoned (watchdog expiry here, or an abort raised elsewhere).
__device__ __noinline__ bool spin_events(const KernelParams& p, const TaskDesc& d, int32_t step, int32_t worker) {
  const int lane = threadIdx.x & 31;
  bool ok = true;
  for (int32_t i = lane; i < d.wait_count && ok; i += 32) {
    const WaitEntry w = wait_entry(p, d, i);
    const int64_t k = static_cast<int64_t>(step) + 1 - w.distance;
    if (k <= 0) continue;
    const unsigned long long need = static_cast<unsigned long long>(w.target) * k;
    const WaitCounter ctr = wait_counter(p, w);
    unsigned long long v = ctr.load();
    if (v >= need) continue;
    const uint64_t t0 = global_timer_ns();
    for (uint32_t spins = 1;; ++spins) {
      v = ctr.load();
      if (v >= need) break;
      if (spins % 64 != 0) continue;
      if (ld_relaxed_u32(p.abort_flag) != 0) {
        ok = false;
        break;
      }
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
          p.error->peer = w.peer;
          __threadfence();
        }
        atomicExch(p.abort_flag, 1u);
        ok = false;
        break;
      }
    }
  }
  return __all_sync(0xffffffffu, ok);
}

// Before the first spin the warp runs on_wait() (once, every lane), where the task's
// events were not all complete at the first look.
template <class OnWait>
__device__ __forceinline__ bool wait_events(const KernelParams& p, const TaskDesc& d, int32_t step, int32_t worker,
                                            OnWait on_wait) {
  const int lane = threadIdx.x & 31;
  bool ready = true;
  for (int32_t i = lane; i < d.wait_count; i += 32) {
    const WaitEntry w = wait_entry(p, d, i);
    const int64_t k = static_cast<int64_t>(step) + 1 - w.distance;
    if (k > 0 && wait_counter(p, w).load() < static_cast<unsigned long long>(w.target) * k) ready = false;
  }
  if (__all_sync(0xffffffffu, ready)) return true;
  on_wait();
  return spin_events(p, d, step, worker);
}

// The completion warp, once the task's body is done (the body threads synchronized and
// arrived on the task's done barrier, which every lane of this warp waited for): one
// release fence orders the body's writes before the adds, which the lanes share.
__device__ __forceinline__ int32_t trigger_entry(const KernelParams& p, const TaskDesc& d, int32_t i) {
  return i < kInlineTrigs ? d.trig[i] : p.triggers[d.trig_begin + i - kInlineTrigs];
}

// An event that other ranks wait on (kTrigAllRanks) gets a system-scope fence and add.
__device__ __forceinline__ void trigger_events(const KernelParams& p, const TaskDesc& d) {
  if (d.trig_count <= 0) return;
  bool all_ranks = false;
  for (int32_t i = threadIdx.x & 31; i < d.trig_count; i += 32) all_ranks |= (trigger_entry(p, d, i) & kTrigAllRanks) != 0;
  if (__any_sync(0xffffffffu, all_ranks))
    fence_acq_rel_sys();
  else
    fence_acq_rel_gpu();
  for (int32_t i = threadIdx.x & 31; i < d.trig_count; i += 32) {
    const int32_t e = trigger_entry(p, d, i);
    if (e & kTrigAllRanks)
      red_relaxed_sys_add(&p.counters[e & ~kTrigAllRanks], 1ull);
    else
      red_relaxed_add(&p.counters[e], 1ull);
  }
}

}  // namespace dev
}  // namespace mpk
