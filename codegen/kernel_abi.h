// Host mirror of the megakernel's binary interface (runtime/device/abi.cuh): the task
// descriptor, wait-table entry, stream chunk, kernel parameters, error and trace records. Every
// generated kernel source carries static_asserts, written from these structs'
// offsets, that the device side lays them out identically.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace mpk {
namespace abi {

inline constexpr int kPtrSlots = 10;
inline constexpr int kArgSlots = 5;
inline constexpr int kInlineWaits = 2;
inline constexpr int kInlineTrigs = 3;
inline constexpr int kBoxCols = 64;
inline constexpr int kControlThreads = 96;  // the stream, dispatch and completion warps of a worker block

// The most weight rows one linear row group may have: every body warp owns at most 8
// rows of it at batch 1, max(1, 8 / batch) above, each with 8 f32 accumulators per batch
// row in registers (runtime/device/tasks_linear.cuh); at batch 1 and 8 warps, 64 rows.
inline int64_t max_linear_rows(int64_t warps, int64_t batch) {
  const int64_t per_warp = batch >= 8 ? 1 : 8 / batch;
  const int64_t rows = warps * per_warp / 8 * 8;
  return rows < 8 ? 8 : rows;
}

// The pointer slot of a linear group member's output (0 is x, 3 the norm weight).
inline constexpr int group_out_slot(int m) { return m < 2 ? m + 1 : m + 2; }

struct WaitEntry {
  int32_t event;
  int32_t target;
  int32_t distance;
  int32_t pad;
};

struct TaskDesc {
  uint64_t ptr[kPtrSlots];
  int32_t inst;
  int32_t task;
  int32_t wait_count;
  int32_t wait_begin;
  int32_t trig_count;
  int32_t trig_begin;
  int32_t chunk_begin;
  int32_t chunk_count;
  int32_t arg[kArgSlots];
  int32_t trig[kInlineTrigs];
  WaitEntry wait[kInlineWaits];
  int32_t members;
  int32_t member[3];
};
static_assert(sizeof(TaskDesc) == 192);

struct StreamChunk {
  uint64_t src;
  uint32_t bytes;
  uint32_t claim;
};

struct PoolDesc {
  int32_t first_chunk;
  int32_t unit_chunks;
  int32_t total_chunks;
  int32_t units;
  int32_t shares;
  int32_t pad[3];
};

struct ErrorRecord {
  uint32_t flag;
  int32_t worker;
  int32_t task;
  int32_t step;
  int32_t event;
  int32_t sm;
  uint64_t counter;
  uint64_t needed;
  uint64_t waited_ns;
};

struct TraceRecord {
  int32_t task;
  int32_t step;
  int32_t worker;
  int32_t sm;
  uint64_t wait_begin_ns;
  uint64_t start_ns;
  uint64_t end_ns;
};

struct PackBox {
  uint64_t src;
  uint64_t dst;
  int64_t row_stride;
  int32_t rows;
  int32_t valid_rows;
};

// Device pointers are carried as uint64_t on the host.
struct KernelParams {
  uint64_t tasks;
  uint64_t queue_offsets;
  uint64_t worker_chunks;
  uint64_t chunk_offsets;
  uint64_t task_chunks;
  uint64_t pools;
  uint64_t pool_counters;
  uint64_t waits;
  uint64_t triggers;
  uint64_t counters;
  uint64_t prompt;
  uint64_t token_history;
  uint64_t logits_history;
  uint64_t step_counter;
  uint64_t abort_flag;
  uint64_t error;
  uint64_t trace;
  uint64_t trace_count;
  uint64_t watchdog_ns;
  int32_t prompt_len;
  int32_t num_steps;
  int32_t num_workers;
  int32_t trace_capacity;
  int32_t batch;
  int32_t vocab;
};

// C++ static_asserts, for the generated source, that the device structs match these.
std::string layout_asserts();

}  // namespace abi
}  // namespace mpk
