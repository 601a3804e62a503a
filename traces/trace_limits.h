// Plausible upper bounds on what a trace.db row may say (a machine model's and a cost
// file's are in ir/machine_check.h). A trace.db is untrusted input: the reader
// (traces/trace_rows.h), the writer and the simulator refuse values outside these bounds with a
// message naming the field, instead of allocating or overflowing on them. The bounds are far
// above what real runs reach: Qwen3 8B decomposed for 132 SMs has 30 K tasks and 1 K events,
// Llama 3 405B (126 layers) about 10x that; a GPU has at most a few hundred SMs.
#pragma once

#include <cstdint>

#include "ir/machine_check.h"
#include "ir/verifier.h"

namespace mpk {

// Workers of a schedule and SMs of a device: at most a machine model's SMs.
inline constexpr int64_t kMaxWorkers = kMaxSmCount;
// Decode steps of one run (Llama 3's context is 128 K positions).
inline constexpr int64_t kMaxSteps = int64_t{1} << 20;
// Tasks, events and operators of one graph; decoder layers (Llama 3 405B: 126).
inline constexpr int64_t kMaxTasks = int64_t{1} << 24;
inline constexpr int64_t kMaxEvents = int64_t{1} << 24;
inline constexpr int64_t kMaxOperators = int64_t{1} << 20;
inline constexpr int64_t kMaxTraceLayers = int64_t{1} << 16;
// The analyses index executions by (task, step) and event releases by (event, step):
// (tasks + events) x steps slots. A complete run records every task at every step, so its
// slots are about its execution rows; a run may ask for at most this many slots per
// execution row plus kIndexSlotsFree, which keeps memory proportional to the file.
inline constexpr int64_t kIndexSlotsPerExecution = 4;
inline constexpr int64_t kIndexSlotsFree = int64_t{1} << 24;
// Any time in a trace (ns from the run's start): about 13 days.
inline constexpr int64_t kMaxTraceNs = int64_t{1} << 50;
// One task's bytes and flops per step: the verifier's kMaxTaskBytes and kMaxTaskFlops
// (ir/verifier.h), since a stored graph is a verified module's.
inline constexpr int64_t kMaxTraceBatch = int64_t{1} << 16;

}  // namespace mpk
