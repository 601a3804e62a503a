// The weight stream: a ring of kStages shared-memory slots that thread 0 fills with
// linear bulk copies (cp.async.bulk through the copy engine, completing on one mbarrier
// per slot, L2 evict-first) in the exact order the worker's tasks will consume them,
// running ahead across task and step boundaries. A task issues its successors' weights
// before it waits on its own events, so dependency waits overlap the weight stream.
// Chunk c lives in slot c % kStages; its mbarrier phase parity is (c / kStages) & 1.
// A chunk is s_boxes boxes of [rows x 64 columns]; each box row is 128 bytes whose
// 16-byte pieces are permuted by XOR with (row % 8), so a thread per row reads
// conflict-free (swizzled_vec below). The runtime stores every task's chunks in that
// form, one after the other, at TaskDesc::s_src (codegen/stream_pack.h): a chunk is
// one contiguous copy, which keeps DRAM busy with long bursts.
#pragma once

#include <cstdint>

#include "runtime/device/abi.cuh"

namespace mpk {
namespace dev {

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(count)
               : "memory");
}

__device__ __forceinline__ void mbar_fence_init() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

__device__ __forceinline__ void mbar_expect_tx(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)),
               "r"(bytes)
               : "memory");
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

__device__ __forceinline__ void bulk_copy(void* dst, uint64_t src, uint32_t bytes, uint64_t* bar,
                                          uint64_t policy) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint"
      " [%0], [%1], %2, [%3], %4;" ::"r"(smem_addr(dst)),
      "l"(src), "r"(bytes), "r"(smem_addr(bar)), "l"(policy)
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

// The thread that issues the copies: the last one, in a warp that task bodies leave
// free of row work, so refilling overlaps the other threads' arithmetic.
constexpr int kProducer = kThreads - 1;

__device__ __forceinline__ void bulk_prefetch_l2(uint64_t src, uint32_t bytes) {
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(src), "r"(bytes) : "memory");
}

// A position in the chunk sequence of a queue run for steps [0, num_steps).
struct StreamCursor {
  int32_t item = 0;    // index into the queue
  int32_t chunk = 0;   // next chunk of that task
  int32_t step = 0;
  uint32_t offset = 0;  // byte offset of that chunk in the task's image

  // Skips tasks without (more) chunks; false once past the last step.
  __device__ __forceinline__ bool settle(const TaskDesc* __restrict__ tasks, const int32_t* __restrict__ queue,
                                         int32_t qlen, int32_t num_steps) {
    while (step < num_steps) {
      const TaskDesc* d = &tasks[queue[item]];
      if (chunk < d->s_groups * d->s_col_chunks) return true;
      chunk = 0;
      offset = 0;
      if (++item == qlen) {
        item = 0;
        ++step;
      }
    }
    return false;
  }

  // The current chunk's address and bytes: every box of it (for a linear group, each
  // member's boxes for the same columns).
  __device__ __forceinline__ uint64_t source(const TaskDesc* __restrict__ tasks,
                                             const int32_t* __restrict__ queue, uint32_t& bytes) const {
    const TaskDesc* d = &tasks[queue[item]];
    const int32_t col_chunks = d->s_col_chunks;
    const int32_t g = chunk / col_chunks, c = chunk % col_chunks;
    const int32_t boxes = c == col_chunks - 1 ? d->s_boxes_last : d->s_boxes;
    int32_t rows = 0;
    if (d->arg[4] > 1) {
      for (int32_t m = 0; m < d->arg[4]; ++m) rows += (m == 0 ? d : &tasks[d->arg[m]])->s_box_rows;
    } else {
      rows = g == d->s_groups - 1 ? d->s_last_rows : d->s_box_rows;
    }
    bytes = static_cast<uint32_t>(rows * 128 * boxes);
    return d->s_src + offset;
  }

  __device__ __forceinline__ void advance(uint32_t bytes) {
    ++chunk;
    offset += bytes;
  }
};

// Per-block stream state. `consumed` is kept identically by every thread; the cursors
// only by the producer thread: `cur` issues copies into the ring, `ahead` runs up to
// kL2Ahead chunks further and prefetches them into L2, so the ring's copies find them
// there (the ring alone holds too few bytes to hide a whole phase of weights).
struct WeightStream {
  unsigned char* ring;  // kStages * kSlotBytes of shared memory, 1024-byte aligned
  uint64_t* full;       // kStages mbarriers
  uint32_t consumed;
  uint32_t issued;      // producer
  uint32_t prefetched;  // producer: chunks prefetched into L2 (>= issued)
  StreamCursor cur, ahead;
  uint64_t policy;

  __device__ void init(unsigned char* ring_smem, uint64_t* bars) {
    ring = ring_smem;
    full = bars;
    consumed = 0;
    issued = 0;
    prefetched = 0;
    cur = StreamCursor{};
    ahead = StreamCursor{};
    if (threadIdx.x == kProducer) {
      for (int s = 0; s < kStages; ++s) mbar_init(&full[s], 1);
      mbar_fence_init();
      policy = evict_first_policy();
    }
    __syncthreads();
  }

  // Producer: issue chunks, in consumption order, while slots are free. `queue` holds
  // `qlen` task ids run for steps [0, num_steps).
  __device__ void fill(const TaskDesc* __restrict__ tasks, const int32_t* __restrict__ queue, int32_t qlen,
                       int32_t num_steps) {
    while (issued - consumed < static_cast<uint32_t>(kStages) && cur.settle(tasks, queue, qlen, num_steps)) {
      const uint32_t slot = issued % kStages;
      uint32_t bytes = 0;
      const uint64_t src = cur.source(tasks, queue, bytes);
      mbar_expect_tx(&full[slot], bytes);
      bulk_copy(ring + static_cast<size_t>(slot) * kSlotBytes, src, bytes, &full[slot], policy);
      ++issued;
      cur.advance(bytes);
    }
    if (prefetched < issued) {  // the ring passed the prefetch cursor: restart it there
      ahead = cur;
      prefetched = issued;
    }
    while (prefetched - issued < static_cast<uint32_t>(kL2Ahead) && ahead.settle(tasks, queue, qlen, num_steps)) {
      uint32_t bytes = 0;
      bulk_prefetch_l2(ahead.source(tasks, queue, bytes), bytes);
      ++prefetched;
      ahead.advance(bytes);
    }
  }

  // Every thread: wait for the next chunk and return its slot.
  __device__ const unsigned char* acquire() {
    const uint32_t slot = consumed % kStages;
    mbar_wait(&full[slot], (consumed / kStages) & 1u);
    return ring + static_cast<size_t>(slot) * kSlotBytes;
  }

  // Every thread, after its last read of the acquired slot: frees it. Synchronizes the
  // block; the caller refills (fill) from the producer.
  __device__ void release() {
    __syncthreads();
    ++consumed;
  }

  // Producer, before the block exits (watchdog abort): wait for the copies still
  // in flight so that none lands in shared memory after the block is gone.
  __device__ void drain() {
    for (uint32_t c = consumed; c < issued; ++c) mbar_wait(&full[c % kStages], (c / kStages) & 1u);
  }
};

}  // namespace dev
}  // namespace mpk
