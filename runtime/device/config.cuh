// The compile-time configuration of a worker block, set by the #defines at the top of
// every generated kernel source (codegen/megakernel.cc), and the ABI (abi.cuh,
// task_slots.cuh) brought into the device namespace.
#pragma once

#include "runtime/device/abi.cuh"
#include "runtime/device/task_slots.cuh"

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
#ifndef MPK_CHUNK
#define MPK_CHUNK 1
#endif

namespace mpk {
namespace dev {

using namespace ::mpk::abi;  // the descriptor, the records and the named slots

// A worker block: kWarps body warps run the task bodies (kThreads threads), then three
// control warps: the stream warp (weight stream), the dispatch warp (descriptor
// prefetch, event waits) and the completion warp (event triggers, trace).
// runtime/device/worker.cuh describes the roles.
constexpr int kThreads = MPK_THREADS;
constexpr int kWarps = MPK_THREADS / 32;
constexpr int kStreamWarp = kWarps;
constexpr int kDispatchWarp = kWarps + 1;
constexpr int kCompletionWarp = kWarps + 2;
constexpr int kBlockThreads = kThreads + kControlThreads;
constexpr int kStages = MPK_STAGES;
constexpr int kSlotBytes = MPK_SLOT_BYTES;
constexpr int kInflight = MPK_INFLIGHT;  // weight-stream copies in flight per worker at most
constexpr int kScratchBytes = MPK_SCRATCH_BYTES;
constexpr int kPoolSlots = MPK_POOL_SLOTS;  // cooperative shares in one step of a worker's queue
constexpr int kDescSlots = 4;  // descriptors held in shared memory ahead of the bodies
// Rows per sequence (docs/ir.md "Prefill chunks"): a prefill chunk module's C, 1 for decode
// (positions.cuh). A compile-time constant, so that a decode kernel's positions cost what
// they did before chunks.
constexpr int kChunk = MPK_CHUNK;

}  // namespace dev
}  // namespace mpk
