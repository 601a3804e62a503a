// Plausible upper bounds on what a trace.db row, a machine model and a cost file may say.
// A trace.db and a cost file are untrusted input: the reader (traces/trace_rows.h), the
// writer, the cost-file parser and the simulator refuse values outside these bounds with a
// message naming the field, instead of allocating or overflowing on them. The bounds are far
// above what real runs reach: Qwen3 8B decomposed for 132 SMs has 30 K tasks and 1 K events,
// Llama 3 405B (126 layers) about 10x that; a GPU has at most a few hundred SMs.
#pragma once

#include <cstdint>

#include "ir/verifier.h"

namespace mpk {

// Workers of a schedule and SMs of a device (an H100 has 132, a B200 148).
inline constexpr int64_t kMaxWorkers = 4096;
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

// Devices and machine models: clock, memory bandwidth, shared memory per SM.
inline constexpr int64_t kMaxClockKhz = 100'000'000;  // 100 GHz
inline constexpr double kMinBandwidth = 1e3;          // bytes/s; slower is a typo
inline constexpr double kMaxBandwidth = 1e15;         // bytes/s (an H100 has 3.35e12)
inline constexpr int64_t kMaxSmemPerSm = int64_t{1} << 30;
// Cost-model times (event latency, dispatch gap, per-task fixed time): one second.
inline constexpr double kMaxCostNs = 1e9;
// Per-kind factors of the cost model: a task kind's bytes factor and one SM's arithmetic
// rate (flops per ns; an H100 SM does about 8e3 bf16 flops per ns).
inline constexpr double kMaxBytesScale = 1e6;
inline constexpr double kMaxFlopsPerNs = 1e9;

}  // namespace mpk
