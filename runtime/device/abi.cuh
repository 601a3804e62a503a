// The megakernel's binary interface: the fixed-size task descriptor, the wait-table
// entry, the weight-stream chunk, the kernel parameters, the watchdog's error record and
// the trace record. codegen/kernel_abi.h mirrors these structs on the host; every
// generated kernel static_asserts that both sides agree on each field's offset.
#pragma once

#include <cstdint>

#ifndef MPK_THREADS
#define MPK_THREADS 256
#endif
#ifndef MPK_STAGES
#define MPK_STAGES 6
#endif
#ifndef MPK_SLOT_BYTES
#define MPK_SLOT_BYTES 32768
#endif
#ifndef MPK_INFLIGHT
#define MPK_INFLIGHT 1
#endif
#ifndef MPK_SCRATCH_BYTES
#define MPK_SCRATCH_BYTES 32768
#endif
#ifndef MPK_POOL_SLOTS
#define MPK_POOL_SLOTS 1
#endif

namespace mpk {
namespace dev {

// A worker block: kWarps body warps run the task bodies (kThreads threads), then three
// control warps: the stream warp (weight stream), the dispatch warp (descriptor
// prefetch, event waits) and the completion warp (event triggers, trace).
// runtime/device/worker.cuh describes the roles.
constexpr int kThreads = MPK_THREADS;
constexpr int kWarps = MPK_THREADS / 32;
constexpr int kStreamWarp = kWarps;
constexpr int kDispatchWarp = kWarps + 1;
constexpr int kCompletionWarp = kWarps + 2;
constexpr int kBlockThreads = kThreads + 96;
constexpr int kStages = MPK_STAGES;
constexpr int kSlotBytes = MPK_SLOT_BYTES;
constexpr int kInflight = MPK_INFLIGHT;  // weight-stream copies in flight per worker at most
constexpr int kScratchBytes = MPK_SCRATCH_BYTES;
constexpr int kPoolSlots = MPK_POOL_SLOTS;  // cooperative shares in one step of a worker's queue
constexpr int kDescSlots = 4;  // descriptors held in shared memory ahead of the bodies
constexpr int kPtrSlots = 10;
constexpr int kArgSlots = 5;
constexpr int kInlineWaits = 2;
constexpr int kInlineTrigs = 3;
constexpr int kBoxCols = 64;  // weight-stream box width: 64 bf16 = one 128-byte swizzled row

// Wait until counters[event] >= target * (step + 1 - distance).
struct WaitEntry {
  int32_t event;
  int32_t target;
  int32_t distance;
  int32_t pad;
};

// One task, 192 bytes. ptr[] are pre-offset device pointers whose meaning depends on
// the task kind (the generated dispatch knows it); arg[] are kind-specific integers.
// The first kInlineWaits waits and kInlineTrigs triggers sit in the descriptor, so the
// dispatch and stream warps read them from shared memory; the rest are in
// KernelParams::waits / triggers from wait_begin / trig_begin. chunk_begin / chunk_count
// name the task's own weight chunks in KernelParams::task_chunks (per-op mode; the
// megakernel streams each worker's list). A linear group (members > 1) runs the linear
// tasks (task, member[0..members-1)) as one; member m's output is ptr[group_out_slot(m)].
struct TaskDesc {
  uint64_t ptr[kPtrSlots];
  int32_t inst;        // which dispatch case (template instantiation) runs it
  int32_t task;        // TaskId in the scheduled graph
  int32_t wait_count;
  int32_t wait_begin;  // waits past the inline ones
  int32_t trig_count;
  int32_t trig_begin;  // triggers past the inline ones
  int32_t chunk_begin;
  int32_t chunk_count;
  int32_t arg[kArgSlots];
  int32_t trig[kInlineTrigs];
  WaitEntry wait[kInlineWaits];
  int32_t members;     // tasks this descriptor runs: 1, or 2..4 for a linear group
  int32_t member[3];   // TaskIds of members 1..3 (member 0 is `task`)
};
static_assert(sizeof(TaskDesc) == 192, "TaskDesc is 192 bytes");
static_assert(sizeof(TaskDesc) % 16 == 0, "TaskDesc is copied by the bulk-copy engine");

// The pointer slot of a linear group member's output: 1, 2, 4, 5 (0 is x, 3 the norm).
__host__ __device__ constexpr int group_out_slot(int m) { return m < 2 ? m + 1 : m + 2; }

// One weight chunk: `bytes` bytes at `src`, copied as one unit into a ring slot. A
// record of 0 bytes marks a cooperative share (docs/ir.md): src's low 32 bits are its
// pool; `claim` 0: the share claims the pool's units at run time; 1: it takes the units
// share, share + shares, ... (per-op mode), with the share in src's high 32 bits.
struct StreamChunk {
  uint64_t src;
  uint32_t bytes;
  uint32_t claim;
};

// The units of a cooperative linear (a pool): unit u's chunks are the KernelParams::
// task_chunks records first_chunk + u * unit_chunks ... (the last unit may have fewer;
// the pool has total_chunks). Units are claimed through counters[pool] (grows across
// steps: step s claims units s * units ... (s + 1) * units - 1).
struct PoolDesc {
  int32_t first_chunk;
  int32_t unit_chunks;
  int32_t total_chunks;
  int32_t units;
  int32_t shares;
  int32_t pad[3];
};

// Written once, by the first worker whose wait outlived the watchdog.
struct ErrorRecord {
  uint32_t flag;  // 0: no error
  int32_t worker;
  int32_t task;
  int32_t step;
  int32_t event;
  int32_t sm;
  uint64_t counter;  // the counter's value when the wait gave up
  uint64_t needed;   // the value it waited for
  uint64_t waited_ns;
};

struct TraceRecord {
  int32_t task;
  int32_t step;
  int32_t worker;
  int32_t sm;
  uint64_t wait_begin_ns;  // %globaltimer
  uint64_t start_ns;
  uint64_t end_ns;
};

// One box of a weight-stream image: rows x 128 bytes from src (a row every row_stride
// bytes) to dst, swizzled; rows at or past valid_rows are zero (runtime/device/pack.cuh).
struct PackBox {
  uint64_t src;
  uint64_t dst;
  int64_t row_stride;
  int32_t rows;
  int32_t valid_rows;
};

struct KernelParams {
  const TaskDesc* tasks;             // each worker's queue in order, then the group members
  const int32_t* queue_offsets;      // [workers + 1]: worker w runs tasks[off[w], off[w+1])
  const StreamChunk* worker_chunks;  // each worker's chunks of one step, in order
  const int32_t* chunk_offsets;      // [workers + 1] into worker_chunks
  const StreamChunk* task_chunks;    // per-op mode: TaskDesc::chunk_begin indexes it
  const PoolDesc* pools;             // cooperative linears
  uint32_t* pool_counters;           // [pools], zero at launch
  const WaitEntry* waits;
  const int32_t* triggers;           // event ids
  unsigned long long* counters;      // one per event, zero at launch
  const int32_t* prompt;             // [prompt_len]
  int32_t* token_history;            // [num_steps][batch]: argmax of each step
  float* logits_history;             // [num_steps][batch][vocab] or null
  int32_t* step_counter;             // per-op mode: the current step
  uint32_t* abort_flag;
  ErrorRecord* error;
  TraceRecord* trace;                // [workers][trace_capacity] or null
  uint32_t* trace_count;             // [workers]: records attempted (> capacity: overflow)
  uint64_t watchdog_ns;
  int32_t prompt_len;
  int32_t num_steps;
  int32_t num_workers;
  int32_t trace_capacity;
  int32_t batch;
  int32_t vocab;
};

}  // namespace dev
}  // namespace mpk
