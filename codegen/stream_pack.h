// The layout of the weight stream's images and chunks. Every descriptor that streams
// weights gets one contiguous image holding its chunks in consumption order, each chunk
// exactly as the ring slot holds it (boxes of [rows x 64] bf16, 128-byte rows, 16-byte
// pieces swizzled by row % 8; runtime/device/stream.cuh), so the device fetches a chunk
// with one linear copy. The plan lists the boxes that fill the images (the runtime
// resolves them to addresses and runs runtime/device/pack.cuh over them once, before
// launching) and every descriptor's chunks; a worker streams the chunks of its queue's
// descriptors one after the other (worker_records), a cooperative linear's shares the
// units of one image (owned by share 0) that they claim at run time.
#pragma once

#include <cstdint>
#include <vector>

#include "codegen/megakernel.h"
#include "ir/module.h"

namespace mpk {

inline constexpr uint64_t kNoStream = ~uint64_t{0};

// Rows [row, row + rows) and columns [col, col + 64) of `tensor`, placed at byte `dst`
// of the images; rows at or past valid_rows lie beyond the tensor and are zero.
struct StreamBox {
  TensorId tensor = -1;
  int64_t row = 0, col = 0;
  int32_t rows = 0, valid_rows = 0;
  uint64_t dst = 0;
};

// One chunk: `bytes` at byte `offset` of the images.
struct ChunkSpan {
  uint64_t offset = 0;
  uint32_t bytes = 0;
};

struct StreamPlan {
  std::vector<uint64_t> offset;       // per descriptor: its image's byte offset, or kNoStream
  uint64_t bytes = 0;                 // all images
  std::vector<StreamBox> boxes;       // in image order, covering [0, bytes) once
  std::vector<ChunkSpan> chunks;      // every descriptor's chunks, descriptor after descriptor
  std::vector<int32_t> chunk_begin;   // per descriptor, into chunks; [descriptors + 1]
};

StreamPlan plan_stream(const Megakernel& kernel, const Program& program);

// What worker w streams in one step, in order: its queue's descriptors' chunks (indices
// into plan.chunks), and for a cooperative share, its pool (the units it claims).
struct WorkerRecord {
  int32_t chunk = -1;  // -1: a share of `pool`
  int32_t pool = -1;
};
std::vector<WorkerRecord> worker_records(const Megakernel& kernel, const StreamPlan& plan, int32_t w);

}  // namespace mpk
