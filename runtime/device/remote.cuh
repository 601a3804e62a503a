// Memory operations between GPUs, for tensor parallelism: a kernel reaches a peer GPU's
// arena at the peer base addresses of the GPU group (runtime/gpu/tp_group.h), plain
// 64-bit addresses, so nothing here needs NCCL. A counter that a peer GPU polls is
// released with fence_acq_rel_sys() then red_relaxed_sys_add() (the data written before
// the fence, by this thread or by threads it synchronized with, is visible to whoever
// sees the add) and polled with ld_acquire_sys_u64(). These are system scope where
// events.cuh is .gpu scope: .gpu orders memory only among the threads of one GPU.
#pragma once

#include <cstdint>

namespace mpk {
namespace dev {

// The reader's side: system scope because the counter's writer runs on another GPU.
__device__ __forceinline__ unsigned long long ld_acquire_sys_u64(const unsigned long long* p) {
  unsigned long long v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

// The writer's release fence: system scope because the reader runs on another GPU.
__device__ __forceinline__ void fence_acq_rel_sys() { asm volatile("fence.acq_rel.sys;" ::: "memory"); }

// The add that publishes, after fence_acq_rel_sys(): system scope because the reader
// that polls the counter runs on another GPU.
__device__ __forceinline__ void red_relaxed_sys_add(unsigned long long* p, unsigned long long v) {
  asm volatile("red.relaxed.sys.global.add.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

// A word of a peer's memory, read at system scope: its writer ran on another GPU (the
// reader acquired the writer's counter first).
__device__ __forceinline__ uint32_t ld_relaxed_sys_u32(const void* p) {
  uint32_t v;
  asm volatile("ld.relaxed.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

}  // namespace dev
}  // namespace mpk
