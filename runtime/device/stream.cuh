// The weight stream: a ring of kStages shared-memory slots. One thread of the stream warp
// fills it with linear bulk copies (cp.async.bulk through the copy engine, L2
// evict-first), one chunk per slot, in the exact order the worker's tasks consume them,
// running ahead across task and step boundaries: the chunk list of each worker is
// computed on the host (codegen/stream_pack.h), so issuing a chunk reads one 16-byte
// record, loaded ahead. A cooperative share (docs/ir.md) claims its units there, as the
// stream reaches it: the SMs that stream fastest claim the most. Chunk c lives in slot
// c % kStages. full[slot] completes when the chunk has landed (transaction bytes);
// empty[slot] when every body thread is done reading it, which frees the slot for chunk
// c + kStages. The phase parity of chunk c's use of a slot is (c / kStages) & 1. At
// most kInflight copies are in flight: chunk c is issued once chunk c - kInflight has
// landed. An SM's own loads (event polls, activations) queue behind its outstanding
// copies, so a ring full of requests made every dependency hop slower, while one 32 KiB
// copy per SM still keeps DRAM saturated (docs/megakernel.md). A chunk
// is boxes of [rows x 64 columns]; each box row is 128 bytes whose 16-byte pieces are
// permuted by XOR with (row % 8), so a thread per row reads conflict-free
// (swizzled_vec below).
#pragma once

#include <cstdint>

#include "runtime/device/common.cuh"
#include "runtime/device/config.cuh"

namespace mpk {
namespace dev {


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

// The ring's barriers and slot tags, in the worker's static shared memory. A slot's tag
// is the cooperative unit its chunk belongs to, or -1 in the empty slot that ends a
// share's units.
struct RingBarriers {
  uint64_t full[kStages];
  uint64_t empty[kStages];
  int32_t unit[kStages];

  // One thread, before the block's first barrier.
  __device__ void init() {
    for (int s = 0; s < kStages; ++s) {
      mbar_init(&full[s], 1);
      mbar_init(&empty[s], kThreads);
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
  // After acquire(): the acquired slot's tag.
  __device__ __forceinline__ int32_t tag() const { return bars->unit[consumed % kStages]; }

  // Every body thread, after its last read of the acquired slot. Each thread arrives
  // itself: an arrive releases only its own thread's reads, and the slot's next bulk
  // copy must come after all of them.
  __device__ __forceinline__ void release() {
    mbar_arrive(&bars->empty[consumed % kStages]);
    ++consumed;
  }
};

// A worker's chunk sequence: `per_step` records from `list`, repeated for `steps` steps
// from `step0`; cooperative shares' units come from `pools` / `task_chunks`, claimed
// through `counters`, with `held` keeping, per share of a step, a claim that belongs
// to a later step.
struct ChunkList {
  const StreamChunk* list;
  int32_t per_step;
  int32_t steps;
  int32_t step0;
  const PoolDesc* pools;
  const StreamChunk* task_chunks;
  uint32_t* counters;
  uint32_t* held;  // kPoolSlots of shared memory
};

constexpr uint32_t kNoClaim = ~0u;

// The issuing side, one thread of the stream warp: issues every chunk of the list in
// order, each as soon as its slot is free, with a cooperative share's units in place of
// its record, then an empty slot tagged -1. List records are loaded one ahead, so
// issuing seldom waits on memory; waiting for a slot suspends the thread (mbarrier
// try_wait) until the body warps free it, or until `stop()` says the bodies will
// consume nothing more (a watchdog abort).
template <class Stop>
struct StreamIssuer {
  unsigned char* ring;
  RingBarriers& bars;
  Stop stop;
  uint64_t policy = evict_first_policy();
  uint32_t issued = 0;

  // The next slot, once free; false when stopped.
  __device__ bool take_slot(uint32_t& slot) {
    slot = issued % kStages;
    if (issued >= static_cast<uint32_t>(kStages)) {
      const uint32_t parity = ((issued / kStages) - 1) & 1u;
      while (!mbar_try_wait(&bars.empty[slot], parity))
        if (stop()) return false;
    }
    return true;
  }

  __device__ bool chunk(const StreamChunk& c, int32_t tag) {
    uint32_t slot;
    if (!take_slot(slot)) return false;
    if (kInflight < kStages && issued >= static_cast<uint32_t>(kInflight)) {  // kInflight copies at most
      const uint32_t older = issued - kInflight;
      while (!mbar_try_wait(&bars.full[older % kStages], (older / kStages) & 1u))
        if (stop()) return false;
    }
    bars.unit[slot] = tag;
    mbar_expect_tx(&bars.full[slot], c.bytes);
    bulk_copy(ring + static_cast<size_t>(slot) * kSlotBytes, c.src, c.bytes, &bars.full[slot], policy);
    ++issued;
    return true;
  }

  __device__ bool end_of_units() {
    uint32_t slot;
    if (!take_slot(slot)) return false;
    bars.unit[slot] = -1;
    mbar_arrive(&bars.full[slot]);
    ++issued;
    return true;
  }

  __device__ bool unit(const ChunkList& l, const PoolDesc& pool, int32_t u) {
    const int32_t first = pool.first_chunk + u * pool.unit_chunks;
    const int32_t end = min(first + pool.unit_chunks, pool.first_chunk + pool.total_chunks);
    StreamChunk next = l.task_chunks[first];
    for (int32_t c = first; c < end; ++c) {
      const StreamChunk cur = next;
      if (c + 1 < end) next = l.task_chunks[c + 1];
      if (!chunk(cur, u)) return false;
    }
    return true;
  }

  // A share's units at `step`: claimed (the k-th share of the step in this list) or, in
  // per-op mode, the static ones.
  __device__ bool share(const ChunkList& l, const StreamChunk& marker, int32_t step, int32_t k) {
    const uint32_t p = static_cast<uint32_t>(marker.src & 0xffffffffu);
    const PoolDesc pool = l.pools[p];
    if (marker.claim == 1) {
      for (int32_t u = static_cast<int32_t>(marker.src >> 32); u < pool.units; u += pool.shares)
        if (!unit(l, pool, u)) return false;
      return end_of_units();
    }
    const uint32_t base = static_cast<uint32_t>(step) * static_cast<uint32_t>(pool.units);
    uint32_t c = l.held[k];
    if (c == kNoClaim) c = atomicAdd(&l.counters[p], 1u);
    // The next claim is requested before a unit's chunks are issued, so its round trip
    // overlaps them; the claim that ends the loop belongs to a later step: it is kept.
    while (c < base + static_cast<uint32_t>(pool.units)) {
      const uint32_t next = atomicAdd(&l.counters[p], 1u);
      if (!unit(l, pool, static_cast<int32_t>(c - base))) return false;
      c = next;
    }
    l.held[k] = c;
    return end_of_units();
  }

  __device__ void run(const ChunkList& l) {
    for (int32_t s = 0; s < l.steps; ++s) {
      int32_t shares = 0;
      StreamChunk next = l.per_step > 0 ? l.list[0] : StreamChunk{};
      for (int32_t r = 0; r < l.per_step; ++r) {
        const StreamChunk cur = next;
        if (r + 1 < l.per_step) next = l.list[r + 1];
        const bool ok = cur.bytes != 0 ? chunk(cur, 0) : share(l, cur, l.step0 + s, shares++);
        if (!ok) goto drain;
      }
    }
  drain:
    // No copy may land in shared memory after the block is gone.
    const uint32_t from = issued > static_cast<uint32_t>(kStages) ? issued - kStages : 0;
    for (uint32_t ch = from; ch < issued; ++ch) mbar_wait(&bars.full[ch % kStages], (ch / kStages) & 1u);
  }
};

}  // namespace dev
}  // namespace mpk
