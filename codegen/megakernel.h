// The megakernel generator: from a scheduled TaskGraph, the CUDA source of the
// megakernel (a dispatch over template instantiations of the task bodies in
// runtime/device/, each distinct instantiation emitted once) and its task table (one
// fixed-size descriptor per task, wait and trigger tables beyond the inline ones,
// per-worker queues). Pointers
// in the table are relocations (tensor + byte offset) that the runtime resolves once it
// has allocated the tensors, so the table is plain data computed without a GPU.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/device/task_slots.cuh"
#include "ir/module.h"

namespace mpk {

struct MegakernelOptions {
  int threads = 256;                  // body threads per worker block (a multiple of 32, <= 928);
                                      // the block adds three control warps
  int slot_bytes = 32768;             // weight-stream slot (a multiple of 1024)
  int inflight = 1;                   // weight-stream copies in flight per worker at most
                                      // (0: one per slot); see runtime/device/stream.cuh
  bool l2_prefetch = true;            // the dispatch warp asks L2 for the cache rows an
                                      // attention task reads while it waits on its events
  int64_t smem_bytes = 232448 - 2048; // dynamic shared memory per block (H100 opt-in limit
                                      // minus room for the kernel's static shared memory)
};

// How a descriptor streams its weights: rows [row0, row0 + rows) of a [N, K] bf16
// weight cut into `groups` row groups of `box_rows` rows (the last `last_rows`, both
// multiples of 8), each group into `col_chunks` chunks of `boxes` boxes of 64 columns
// (the last chunk `boxes_last`); chunks go in (group, column) order. A linear group has
// one row group per member and each of its chunks holds every member's boxes for the
// same columns (the members' own shapes give their rows). A SwiGLU linear streams two
// weights: each chunk holds the row group's rows of `weight`, then the same rows of
// `weight2`.
struct StreamShape {
  TensorId weight = -1;   // -1: streams nothing (of its own)
  TensorId weight2 = -1;  // the up weight of a SwiGLU linear
  int32_t pool = -1;      // a cooperative share's pool (Megakernel::pools)
  int32_t row0 = 0, groups = 0, box_rows = 0, last_rows = 0;
  int32_t col_chunks = 0, boxes = 0, boxes_last = 0;
  std::vector<TaskId> members;  // a group's member descriptors, leader first; empty otherwise
};

// A pointer field to fill at load time: descriptor `task`'s ptr[slot] = address of
// `tensor` + byte_offset, or, when rope_table >= 0, the address of that RoPE table.
struct Relocation {
  TaskId task = -1;
  int32_t slot = 0;
  TensorId tensor = -1;
  int64_t byte_offset = 0;
  int32_t rope_table = -1;
};

// A cooperative linear's units (docs/ir.md): its shares stream one image, owned by
// `image` (the descriptor of share 0), whose chunks unit u covers
// [u * unit_chunks, (u + 1) * unit_chunks) of (the last unit fewer).
struct CoopPool {
  OpId op = -1;
  int32_t image = -1;
  int32_t units = 0;
  int32_t unit_chunks = 0;
  int32_t shares = 0;
};

// The tasks of one operator launched together in per-op mode.
struct OpLaunch {
  std::string name;  // operator name, with the task kind when an operator has several
  std::vector<TaskId> tasks;
};

struct Megakernel {
  std::string source;                       // the generated .cu
  std::vector<std::string> instantiations;  // call expressions; TaskDesc::inst indexes it
  std::vector<std::string> prefetches;      // per instantiation: its L2 prefetch call of (d, step,
                                            // lane), step the first position of the step
                                            // (runtime/device/positions.cuh), or ""
  // Descriptors: one per task, indexed by TaskId, then one per group of adjacent linear
  // tasks over the same x that a worker runs as one (queues name the group instead of
  // its members). Pointers come from the relocations (Relocation::task indexes this).
  std::vector<abi::TaskDesc> tasks;
  std::vector<Relocation> relocations;
  // What each descriptor streams (codegen/stream_pack.h lays out the images).
  std::vector<StreamShape> stream;
  // Inverse frequencies of each distinct RoPE; the runtime uploads, per table, f32
  // (cos, sin) pairs [max_seq_len][head_dim / 2] computed as rope_cos_sin_table() does (ir/rope.h).
  std::vector<std::vector<float>> rope_inv;
  std::vector<abi::WaitEntry> waits;
  std::vector<int32_t> triggers;
  std::vector<int32_t> queue_offsets;  // [num_workers + 1]
  std::vector<int32_t> queue_items;   // descriptor indices
  std::vector<OpLaunch> op_launches;   // per-op mode, in a valid sequential order
  std::vector<CoopPool> pools;         // cooperative linears
  int32_t pool_slots = 1;              // the most cooperative shares in one step of a queue
  int32_t num_events = 0;
  int32_t num_workers = 0;
  int32_t batch = 1;
  int32_t chunk = 1;  // rows per sequence: a prefill chunk's C (docs/ir.md "Prefill chunks"), 1 for decode
  int32_t vocab = 0;  // the logits columns (of one rank, where the LM head is split by vocabulary)
  int32_t max_seq_len = 0;
  int threads = 0;  // body threads; a block has threads + abi::kControlThreads
  int stages = 0;
  int slot_bytes = 0;
  int inflight = 0;  // copies in flight per worker at most, <= stages
  int scratch_bytes = 0;
  int64_t dynamic_smem_bytes = 0;  // 1024 (alignment) + stages * slot_bytes + scratch_bytes
  int64_t stream_bytes_per_step = 0;  // weight bytes the tasks stream per decode step
};

// Throws mpk::Error naming the task or tensor for a module that is not scheduled, a task
// whose regions do not have the shape docs/ir.md gives its kind, or a shape the task
// bodies do not support (e.g. a linear K that is not a multiple of 8, or a prefill chunk
// of more than one sequence).
Megakernel generate_megakernel(const Module& scheduled, const MegakernelOptions& options = {});

}  // namespace mpk
