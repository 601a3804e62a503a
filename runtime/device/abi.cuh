// The megakernel's binary interface, in ONE header compiled by the host (g++: codegen/
// writes the task table, runtime/gpu/ uploads it and reads the records back) and by the
// device (nvcc: every generated kernel includes it through megakernel.cuh): the
// fixed-size task descriptor, the wait-table entry, the weight-stream chunk, the
// cooperative pool, the kernel parameters, the watchdog's error record, the trace record
// and the weight-stream pack box. The offsets below are asserted on both sides, so a
// compiler that laid a struct out differently fails to compile. What each task kind
// keeps in the descriptor's pointer and integer slots is runtime/device/task_slots.cuh.
// Plain C++17 and nothing host-side: this is device code that the host may read.
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__CUDACC__)
#define MPK_HD __host__ __device__
#else
#define MPK_HD
#endif

namespace mpk {
namespace abi {

inline constexpr int kPtrSlots = 10;
inline constexpr int kArgSlots = 5;
inline constexpr int kInlineWaits = 2;
inline constexpr int kInlineTrigs = 3;
inline constexpr int kBoxCols = 64;         // weight-stream box width: 64 bf16 = one 128-byte swizzled row
inline constexpr int kControlThreads = 96;  // the stream, dispatch and completion warps of a worker block

// The most weight rows one linear row group may have: every body warp owns at most 8
// rows of it at batch 1, each with 8 f32 accumulators in registers (runtime/device/
// tasks_linear.cuh); on tensor cores (batch >= 2) the warps share its 16-row tiles
// (runtime/device/tensor_core_rows.cuh). At 8 warps, 64 rows.
MPK_HD constexpr int64_t max_linear_rows(int64_t warps) { return warps < 1 ? 8 : warps * 8; }

// The scratch of a linear body on tensor cores (batch >= 2; runtime/device/
// tensor_core_rows.cuh) of K columns in chunks of `cols`, `slots` padded rows per row
// group, byte offsets: the rms scales of a fused norm (batch f32); x, whole (batch rows of
// K + 8 bf16, then the norm weight's K) when that takes at most `budget`, else a ring of
// `slices` (>= 2) slices of a chunk's columns (batch rows of cols + 8, then the norm
// weight's cols); up to kTcMaxRows rows, a row group's partial sums (kTcKSlices x slots x
// batch f32) and two buffers of its sums (slots x batch f32), above, one buffer of sums
// (the warps split the outputs, not K); the argmax epilogue's 2 x warps words; `bytes` in
// all. The budget is kTcXBytes in a decode kernel; in a prefill chunk's (tc_x_budget),
// kTcXBytesChunk up to kTcMaxRows rows: a chunk's x of 16 rows of qwen3-8b's K = 4096,
// or 32 of llama-3.2-1b's 2048, then stays whole instead of being loaded again for every
// row group, at the price of weight-ring stages (two left); above, kTcXBytesTiles, a
// ring of slices that leaves the weight ring three stages beside the sums.
inline constexpr int64_t kTcXBytes = 77824;
inline constexpr int64_t kTcXBytesChunk = 147456;
inline constexpr int64_t kTcXBytesTiles = 73728;
inline constexpr int64_t kTcMaxRows = 32;  // x rows whose sums split K over the warps: up to four 8-column tiles
inline constexpr int64_t kTcMaxChunkRows = 128;  // x rows of a prefill chunk's linears (sixteen 8-column tiles)
MPK_HD constexpr bool tc_split_k(int64_t batch) { return batch <= kTcMaxRows; }
MPK_HD constexpr int64_t tc_x_budget(bool chunk, int64_t batch) {
  return !chunk ? kTcXBytes : tc_split_k(batch) ? kTcXBytesChunk : kTcXBytesTiles;
}
inline constexpr int64_t kTcKSlices = 8;  // a tensor-core sum's k16 steps, dealt round-robin (up to kTcMaxRows rows)
// The bytes of x kept whole: batch rows of K + 8 bf16, then the norm weight's K.
MPK_HD constexpr int64_t tc_whole_x_bytes(int64_t batch, int64_t K, bool norm) {
  return (batch * (K + 8) + (norm ? K : 0)) * 2;
}
// The most boxes a chunk may span on tensor cores: any number when x fits whole, else as
// many as keep two slices within the budget.
MPK_HD constexpr int64_t tc_max_boxes(int64_t batch, int64_t K, bool norm, int64_t budget) {
  if (tc_whole_x_bytes(batch, K, norm) <= budget) return K / 64;
  const int64_t n = (budget / 4 - 8 * batch) / (64 * (batch + (norm ? 1 : 0)));
  return n < 1 ? 1 : n;
}
struct TcLinearScratch {
  int64_t rms, x, x_stride, slice_bytes, slices, partials, sums, red, bytes;
  MPK_HD constexpr bool whole() const { return slices == 0; }
};
MPK_HD constexpr TcLinearScratch tc_linear_scratch(int64_t batch, int64_t K, int64_t cols, int64_t slots,
                                                   int64_t warps, bool norm, int64_t budget) {
  TcLinearScratch s{};
  s.x = (batch * 4 + 15) / 16 * 16;
  const int64_t whole = tc_whole_x_bytes(batch, K, norm);
  s.slice_bytes = (batch * (cols + 8) + (norm ? cols : 0)) * 2;
  s.slices = whole <= budget ? 0 : (budget / s.slice_bytes < 2 ? 2 : budget / s.slice_bytes);
  s.x_stride = s.whole() ? K + 8 : cols + 8;
  s.partials = s.x + (s.whole() ? whole : s.slices * s.slice_bytes);
  const bool split = tc_split_k(batch);
  s.sums = s.partials + (split ? kTcKSlices * slots * batch * 4 : 0);
  s.red = s.sums + (split ? 2 : 1) * slots * batch * 4;
  s.bytes = s.red + 2 * warps * 4;
  return s;
}

// Preparing attention heads (runtime/device/heads.cuh, HeadPrep): the rows a task prepares
// at once, so that a body thread holds at most 2 rotate-half pairs (`heads` a row, hd / 2
// pairs each), and their shared memory: the raw heads (f32) and their rms scales, and,
// with kv, each row's roped k and its v (bf16).
MPK_HD constexpr int64_t head_prep_rows(int64_t hd, int64_t heads, int64_t rows, int64_t threads) {
  const int64_t r = 2 * threads / (heads * (hd / 2));
  return r < 1 ? 1 : r > rows ? rows : r;
}
MPK_HD constexpr int64_t head_scratch_bytes(int64_t hd, int64_t g, bool kv, int64_t rows) {
  const int64_t heads = g + (kv ? 1 : 0);
  return rows * heads * hd * 4 + (rows * heads * 4 + 15) / 16 * 16 + (kv ? rows * 2 * hd * 2 : 0);
}

// A decode attention task (runtime/device/tasks_attention.cuh, Attend) of g query heads
// over at most rmax positions: its query heads (f32, [g][hd]), their scores (f32, rows of
// rmax rounded up to 8), each head's m (f32), then a ring of `tiles` V tiles of `tile`
// positions (bf16, rows of hd; 8 KiB a tile), filled by cp.async `tiles` tiles ahead;
// `bytes` in all. attn_scratch_tiles: the tiles a ring needs at most (every tile of rmax)
// and at least (two, so that a tile's loads overlap the previous tile's sums);
// attn_ring_tiles: those it gets in a kernel of `scratch` bytes of scratch, of which the
// task keeps `reserve` after its own (as many as fit, within those bounds).
struct AttnScratch {
  int64_t tile, tiles, q, scores, score_row, ml, v, tile_bytes, bytes;
};
MPK_HD constexpr int64_t attn_tile_positions(int64_t hd) {
  const int64_t t = 4096 / hd / 8 * 8;
  return t > 64 ? 64 : t < 8 ? 8 : t;
}
MPK_HD constexpr int64_t attn_scratch_tiles(int64_t hd, int64_t rmax, bool most) {
  const int64_t tile = attn_tile_positions(hd), all = (rmax + tile - 1) / tile;
  return most || all < 2 ? all : 2;
}
MPK_HD constexpr AttnScratch attn_scratch(int64_t hd, int64_t g, int64_t rmax, int64_t tiles) {
  AttnScratch s{};
  s.tile = attn_tile_positions(hd);
  s.tiles = tiles < 1 ? 1 : tiles;
  s.score_row = (rmax + 7) / 8 * 8;
  s.q = 0;
  s.scores = g * hd * 4;
  s.ml = s.scores + g * s.score_row * 4;
  s.v = s.ml + (g * 4 + 15) / 16 * 16;
  s.tile_bytes = s.tile * hd * 2;
  s.bytes = s.v + s.tiles * s.tile_bytes;
  return s;
}
MPK_HD constexpr int64_t attn_ring_tiles(int64_t hd, int64_t g, int64_t rmax, int64_t scratch, int64_t reserve) {
  const AttnScratch one = attn_scratch(hd, g, rmax, 1);
  const int64_t fit = (scratch - reserve - one.v) / one.tile_bytes;
  const int64_t least = attn_scratch_tiles(hd, rmax, false), most = attn_scratch_tiles(hd, rmax, true);
  return fit < least ? least : fit < most ? fit : most;
}

// A prefill chunk's attention partial task (runtime/device/tasks_attention.cuh,
// AttendRows) attends `rows` of its rows at once: those whose g query heads hold at most
// 8192 scores and 8192 values. Byte offsets: their query heads (f32; later their o), the
// scores of each head (rmax rounded up to 8, f32), each head's m and l (f32), a K and a V
// tile of `tile` positions (up to kAttnTile; rows of hd + 8 bf16), the raw query heads
// (bf16); a fused task's RoPE rows (hd / 2 (cos, sin) a row), q norm weight (bf16) and
// rms scales (f32); `bytes` in all.
inline constexpr int64_t kAttnTile = 64;
struct AttnRowsScratch {
  int64_t rows, tile, q, scores, score_row, ml, k, v, tile_row, raw, rope, norm, scales, bytes;
};
MPK_HD constexpr int64_t align16(int64_t n) { return (n + 15) / 16 * 16; }
MPK_HD constexpr AttnRowsScratch attn_rows_scratch(int64_t hd, int64_t g, int64_t rows, int64_t rmax, bool fused) {
  AttnRowsScratch s{};
  s.score_row = (rmax + 7) / 8 * 8;
  const int64_t by_scores = 8192 / (g * s.score_row), by_values = 8192 / (g * hd);
  const int64_t most = by_scores < by_values ? by_scores : by_values;
  s.rows = most < 1 ? 1 : most < rows ? most : rows;
  s.tile = s.score_row < kAttnTile ? s.score_row : kAttnTile;
  s.tile_row = hd + 8;
  s.q = 0;
  s.scores = s.rows * g * hd * 4;
  s.ml = s.scores + s.rows * g * s.score_row * 4;
  s.k = s.ml + align16(2 * s.rows * g * 4);
  s.v = s.k + s.tile * s.tile_row * 2;
  s.raw = s.v + s.tile * s.tile_row * 2;
  s.rope = s.raw + s.rows * g * hd * 2;
  s.norm = s.rope + (fused ? s.rows * hd * 4 : 0);
  s.scales = s.norm + (fused ? align16(hd * 2) : 0);
  s.bytes = s.scales + (fused ? align16(s.rows * g * 4) : 0);
  return s;
}

// Tensor parallel (docs/ir.md "Tensor parallel"): the most ranks, and the bit of a
// trigger's event id that marks an event other ranks wait on (its add is system scope).
inline constexpr int kMaxRanks = 8;
inline constexpr int32_t kTrigAllRanks = 1 << 30;

// Wait until counters[event] >= target * (step + 1 - distance): this rank's counter (peer
// 0), or rank peer - 1's (tensor parallel: KernelParams::peer_delta).
struct WaitEntry {
  int32_t event;
  int32_t target;
  int32_t distance;
  int32_t peer;
};

// One task, 192 bytes. ptr[] are pre-offset device pointers and arg[] integers whose
// meaning the task kind gives (task_slots.cuh names them). The first kInlineWaits waits
// and kInlineTrigs triggers sit in the descriptor, so the dispatch and stream warps read
// them from shared memory; the rest are in KernelParams::waits / triggers from
// wait_begin / trig_begin. chunk_begin / chunk_count name the task's own weight chunks
// in KernelParams::task_chunks (per-op mode; the megakernel streams each worker's
// list). A linear group (members > 1) runs the linear tasks (task, member[0..members-1))
// as one (slots::Linear::group_y).
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
  int32_t peer;      // the WaitEntry's: 0 this rank's counter, q + 1 rank q's
  int32_t pad;
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

// Device pointers; the host fills them with DeviceBuffer addresses.
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
  const int32_t* prompt;             // [1 or batch][prompt_len]
  int32_t* token_history;            // [num_steps][batch]: argmax of each step
  float* logits_history;             // [num_steps][batch][vocab] or null
  int32_t* step_counter;             // per-op mode: the current step
  uint32_t* abort_flag;
  ErrorRecord* error;
  TraceRecord* trace;                // [workers][trace_capacity] or null
  uint32_t* trace_count;             // [workers]: records attempted (> capacity: overflow)
  // Streaming and stopping (docs/megakernel.md), with publish_task >= 0:
  int32_t* host_tokens;              // [num_steps][batch] in mapped host memory
  uint32_t* host_steps;              // mapped: the steps host_tokens holds so far
  const int32_t* stop_ids;           // [stop_count]: a row is done once it produced one
  int32_t* stopped_at;               // the step after which the kernel stopped, or -1
  uint64_t watchdog_ns;
  int32_t prompt_len;
  int32_t num_steps;
  int32_t num_workers;
  int32_t trace_capacity;
  int32_t batch;
  int32_t vocab;
  int32_t publish_task;              // the argmax_reduce task (TaskId), or -1: no streaming
  int32_t stop_count;
  int32_t first_generated;           // stop ids count from this step on (after the prompt)
  int32_t prompt_stride;             // 0: every batch row reads prompt row 0; prompt_len: row b reads row b
  // Tensor parallel: rank q's copy of an address in this rank's symmetric arena (the event
  // counters, the tensors all_reduce reads on every rank) is that address + peer_delta[q].
  // One rank: ranks 1, peer_delta[0] 0.
  int64_t peer_delta[kMaxRanks];
  int32_t ranks;
  int32_t rank;
  // Positions (docs/ir.md "Prefill chunks"; runtime/device/positions.cuh): launch step s is
  // the module's step first_step + s (event counters still count launch steps from 0); a
  // prefill chunk's rows store only below position `end` (E). A decode module has no end
  // (the field is unused); its launch that follows a prefill starts at first_step E.
  int32_t first_step;
  int32_t end;
};

// The layout both compilers must give these structs (the host writes them, the device
// reads them, or the other way round).
static_assert(sizeof(TaskDesc) == 192 && sizeof(TaskDesc) % 16 == 0, "TaskDesc: 192 bytes, bulk-copied");
static_assert(offsetof(TaskDesc, inst) == 80 && offsetof(TaskDesc, chunk_count) == 108 &&
                  offsetof(TaskDesc, arg) == 112 && offsetof(TaskDesc, trig) == 132 &&
                  offsetof(TaskDesc, wait) == 144 && offsetof(TaskDesc, members) == 176,
              "TaskDesc layout");
static_assert(sizeof(WaitEntry) == 16 && sizeof(StreamChunk) == 16 && sizeof(PoolDesc) == 32, "table entries");
static_assert(sizeof(ErrorRecord) == 56 && offsetof(ErrorRecord, counter) == 24 && offsetof(ErrorRecord, peer) == 48,
              "ErrorRecord layout");
static_assert(sizeof(TraceRecord) == 40 && offsetof(TraceRecord, wait_begin_ns) == 16, "TraceRecord layout");
static_assert(sizeof(PackBox) == 32 && offsetof(PackBox, rows) == 24, "PackBox layout");
static_assert(sizeof(KernelParams) == 304 && offsetof(KernelParams, watchdog_ns) == 176 &&
                  offsetof(KernelParams, vocab) == 204 && offsetof(KernelParams, first_generated) == 216 &&
                  offsetof(KernelParams, peer_delta) == 224 && offsetof(KernelParams, rank) == 292 &&
                  offsetof(KernelParams, end) == 300,
              "KernelParams layout");

}  // namespace abi
}  // namespace mpk
