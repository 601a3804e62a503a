// What a task body sees besides its descriptor: the kernel parameters, the launch step
// (with which positions.cuh places each row), the block's scratch shared memory and the
// weight stream. Task bodies run on the body threads only (kThreads of them; they
// synchronize with body_sync(), never __syncthreads()) and never read blockIdx: any
// worker can run any task.
#pragma once

#include <cstdint>

#include "runtime/device/config.cuh"
#include "runtime/device/stream.cuh"

namespace mpk {
namespace dev {

struct TaskCtx {
  const KernelParams* params;
  int32_t step;            // launch step, from 0 (row_pos gives a row's position)
  unsigned char* scratch;  // kScratchBytes of shared memory, 16-byte aligned
  BodyStream* stream;

  // The next weight chunk of the running task, in shared memory.
  __device__ __forceinline__ const unsigned char* next_chunk() { return stream->acquire(); }
  // Done with the chunk from next_chunk() (every body thread, after its warp's reads).
  __device__ __forceinline__ void done_chunk() { stream->release(); }
};

}  // namespace dev
}  // namespace mpk
