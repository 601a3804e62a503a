// The megakernel's binary interface: the fixed-size task descriptor, the wait-table
// entry, the kernel parameters, the watchdog's error record and the trace record.
// codegen/kernel_abi.h mirrors these structs on the host; every generated kernel
// static_asserts that both sides agree on each field's offset.
#pragma once

#include <cstdint>

#ifndef MPK_THREADS
#define MPK_THREADS 256
#endif
#ifndef MPK_STAGES
#define MPK_STAGES 8
#endif
#ifndef MPK_SLOT_BYTES
#define MPK_SLOT_BYTES 32768
#endif
#ifndef MPK_L2_AHEAD
#define MPK_L2_AHEAD 0
#endif
#ifndef MPK_SCRATCH_BYTES
#define MPK_SCRATCH_BYTES 32768
#endif

namespace mpk {
namespace dev {

constexpr int kThreads = MPK_THREADS;
constexpr int kWarps = MPK_THREADS / 32;
constexpr int kStages = MPK_STAGES;
constexpr int kSlotBytes = MPK_SLOT_BYTES;
constexpr int kScratchBytes = MPK_SCRATCH_BYTES;
constexpr int kL2Ahead = MPK_L2_AHEAD;  // weight chunks prefetched into L2 beyond the ring
constexpr int kPtrSlots = 6;
constexpr int kArgSlots = 5;
constexpr int kBoxCols = 64;  // weight-stream box width: 64 bf16 = one 128-byte swizzled row

// One task, 128 bytes. ptr[] are pre-offset device pointers whose meaning depends on
// the task kind (the generated dispatch knows it); arg[] are kind-specific integers.
//
// A task that streams weights (linear, lm_head) names them in s_*: its rows
// [s_row0, s_row0 + rows) of a [N, K] bf16 weight are cut into s_groups row groups of
// s_box_rows rows (the last group s_last_rows, both multiples of 8), and each group
// into s_col_chunks chunks of s_boxes boxes of kBoxCols columns (the last chunk
// s_boxes_last). Chunks go in (group, column) order. The runtime packs the chunks, in
// that order and already swizzled as shared memory holds them, into one contiguous
// image at s_src (codegen/stream_pack.h), so each chunk is one linear copy.
// A linear task's arg[4] counts the linear tasks it runs: 1, or 2..4 for a group whose
// leader (this descriptor) lists the other members' descriptors in arg[1..3]; a group
// has one row group per member and its chunks hold every member's boxes.
struct TaskDesc {
  uint64_t ptr[kPtrSlots];
  int32_t inst;        // which dispatch case (template instantiation) runs it
  int32_t task;        // TaskId in the scheduled graph
  int32_t wait_begin;  // into KernelParams::waits
  int32_t wait_count;
  int32_t trig_begin;  // into KernelParams::triggers
  int32_t trig_count;
  uint64_t s_src;
  int32_t s_row0;
  int32_t s_groups;
  int32_t s_box_rows;
  int32_t s_last_rows;
  int32_t s_col_chunks;
  int32_t s_boxes;
  int32_t s_boxes_last;
  int32_t arg[kArgSlots];
};
static_assert(sizeof(TaskDesc) == 128, "TaskDesc is 128 bytes");

// Wait until counters[event] >= target * (step + 1 - distance).
struct WaitEntry {
  int32_t event;
  int32_t target;
  int32_t distance;
  int32_t pad;
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
  const TaskDesc* tasks;         // indexed by TaskId
  const int32_t* queue_offsets;  // [workers + 1]
  const int32_t* queue_items;    // task ids, each worker's list in order
  const WaitEntry* waits;
  const int32_t* triggers;       // event ids
  unsigned long long* counters;  // one per event, zero at launch
  const int32_t* prompt;         // [prompt_len]
  int32_t* token_history;        // [num_steps][batch]: argmax of each step
  float* logits_history;         // [num_steps][batch][vocab] or null
  int32_t* step_counter;         // per-op mode: the current step
  uint32_t* abort_flag;
  ErrorRecord* error;
  TraceRecord* trace;            // [workers][trace_capacity] or null
  uint32_t* trace_count;         // [workers]: records attempted (> capacity: overflow)
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
