// The weight stream: a ring of kStages shared-memory slots. One thread of the stream warp
// fills it with linear bulk copies (cp.async.bulk through the copy engine, L2 evict-first), one chunk
// per slot, in the exact order the worker's tasks consume them, running ahead across
// task and step boundaries: the chunk list of each worker is computed on the host
// (codegen/stream_pack.h), so issuing a chunk reads one prefetched 16-byte record.
// Chunk c lives in slot c % kStages. full[slot] completes when the chunk has landed
// (transaction bytes); empty[slot] when every body warp is done reading it, which frees
// the slot for chunk c + kStages. The phase parity of chunk c's use of a slot is
// (c / kStages) & 1. A chunk is boxes of [rows x 64 columns]; each box row is 128 bytes
// whose 16-byte pieces are permuted by XOR with (row % 8), so a thread per row reads
// conflict-free (swizzled_vec below).
#pragma once

#include <cstdint>

#include "runtime/device/abi.cuh"

namespace mpk {
namespace dev {

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(count) : "memory");
}

__device__ __forceinline__ void mbar_fence_init() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

__device__ __forceinline__ void mbar_expect_tx(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)), "r"(bytes)
               : "memory");
}

// Arrives once (release at CTA scope).
__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_addr(bar)) : "memory");
}

// Non-blocking: whether the phase of `parity` has completed (acquire at CTA scope).
__device__ __forceinline__ bool mbar_test(uint64_t* bar, uint32_t parity) {
  uint32_t done;
  asm volatile(
      "{\n .reg .pred p;\n"
      " mbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;\n"
      " selp.u32 %0, 1, 0, p;\n}"
      : "=r"(done)
      : "r"(smem_addr(bar)), "r"(parity)
      : "memory");
  return done != 0;
}

__device__ __forceinline__ bool mbar_try_wait(uint64_t* bar, uint32_t parity) {
  uint32_t done;
  asm volatile(
      "{\n .reg .pred p;\n"
      " mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
      " selp.u32 %0, 1, 0, p;\n}"
      : "=r"(done)
      : "r"(smem_addr(bar)), "r"(parity)
      : "memory");
  return done != 0;
}

__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
  while (!mbar_try_wait(bar, parity)) {
  }
}

// `bytes` (a multiple of 16) from global `src` to shared `dst`, completing on `bar`.
__device__ __forceinline__ void bulk_copy(void* dst, uint64_t src, uint32_t bytes, uint64_t* bar,
                                          uint64_t policy) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint"
      " [%0], [%1], %2, [%3], %4;" ::"r"(smem_addr(dst)),
      "l"(src), "r"(bytes), "r"(smem_addr(bar)), "l"(policy)
      : "memory");
}
__device__ __forceinline__ void bulk_copy(void* dst, const void* src, uint32_t bytes, uint64_t* bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                   smem_addr(dst)),
               "l"(src), "r"(bytes), "r"(smem_addr(bar))
               : "memory");
}

// The 16-byte piece `j` (0..7) of row `r` of a swizzled box.
__device__ __forceinline__ const uint4* swizzled_vec(const unsigned char* box, int r, int j) {
  return reinterpret_cast<const uint4*>(box + r * 128 + ((j ^ (r & 7)) << 4));
}

__device__ __forceinline__ uint64_t evict_first_policy() {
  uint64_t p;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p));
  return p;
}

// The ring's barriers, in the worker's static shared memory.
struct RingBarriers {
  uint64_t full[kStages];
  uint64_t empty[kStages];

  // One thread, before the block's first barrier.
  __device__ void init() {
    for (int s = 0; s < kStages; ++s) {
      mbar_init(&full[s], 1);
      mbar_init(&empty[s], kWarps);
    }
  }
};

// What the body threads hold: the ring and how many chunks they consumed (kept
// identically by every body thread).
struct BodyStream {
  unsigned char* ring;  // kStages * kSlotBytes of shared memory
  RingBarriers* bars;
  uint32_t consumed;

  // Every body thread: wait for the next chunk and return its slot.
  __device__ __forceinline__ const unsigned char* acquire() {
    const uint32_t slot = consumed % kStages;
    mbar_wait(&bars->full[slot], (consumed / kStages) & 1u);
    return ring + static_cast<size_t>(slot) * kSlotBytes;
  }

  // Every body thread, after its warp's last read of the acquired slot: the warp frees it.
  __device__ __forceinline__ void release() {
    __syncwarp();
    if ((threadIdx.x & 31) == 0) mbar_arrive(&bars->empty[consumed % kStages]);
    ++consumed;
  }
};

// A worker's chunk sequence: `per_step` records from `list`, repeated for `steps` steps.
struct ChunkList {
  const StreamChunk* list;
  int32_t per_step;
  int32_t steps;
};

// The issuing side, one thread of the stream warp: issues every chunk of the list in
// order, each as soon as its slot is free. The record of the next chunk is loaded one
// chunk ahead, so issuing never waits on memory; waiting for a slot suspends the thread
// (mbarrier try_wait) until the body warps free it, or until `stop()` says the bodies
// will consume nothing more (a watchdog abort).
struct StreamIssuer {
  ChunkList chunks;
  uint32_t total;
  uint32_t issued;

  template <class Stop>
  __device__ void run(const ChunkList& c, unsigned char* ring, RingBarriers& bars, Stop stop) {
    chunks = c;
    total = static_cast<uint32_t>(c.per_step) * static_cast<uint32_t>(c.steps);
    issued = 0;
    const uint64_t policy = evict_first_policy();
    StreamChunk next = total > 0 ? chunks.list[0] : StreamChunk{};
    while (issued < total) {
      const uint32_t slot = issued % kStages;
      if (issued >= static_cast<uint32_t>(kStages)) {
        const uint32_t parity = ((issued / kStages) - 1) & 1u;
        bool stopped = false;
        while (!mbar_try_wait(&bars.empty[slot], parity))
          if ((stopped = stop())) break;
        if (stopped) break;
      }
      mbar_expect_tx(&bars.full[slot], next.bytes);
      bulk_copy(ring + static_cast<size_t>(slot) * kSlotBytes, next.src, next.bytes, &bars.full[slot], policy);
      if (++issued < total) next = chunks.list[issued % static_cast<uint32_t>(chunks.per_step)];
    }
    // No copy may land in shared memory after the block is gone.
    const uint32_t from = issued > static_cast<uint32_t>(kStages) ? issued - kStages : 0;
    for (uint32_t ch = from; ch < issued; ++ch) mbar_wait(&bars.full[ch % kStages], (ch / kStages) & 1u);
  }
};

}  // namespace dev
}  // namespace mpk
