// What a task body sees besides its descriptor: the kernel parameters, the decode step
// (and with it the sequence position), the block's scratch shared memory and the
// weight stream. Task bodies never read blockIdx: any worker can run any task.
#pragma once

#include <cstdint>

#include "runtime/device/abi.cuh"
#include "runtime/device/stream.cuh"

namespace mpk {
namespace dev {

struct TaskCtx {
  const KernelParams* params;
  int32_t step;             // decode step; the sequence position is the step
  unsigned char* scratch;   // kScratchBytes of shared memory, 16-byte aligned
  WeightStream* stream;
  const int32_t* queue;     // this block's task list (for refilling the stream)
  int32_t queue_len;
  int32_t stream_steps;     // steps the stream runs ahead to

  // The next weight chunk of the running task, in shared memory.
  __device__ __forceinline__ const unsigned char* next_chunk() { return stream->acquire(); }
  // Done with the chunk from next_chunk(); synchronizes the block and refills.
  __device__ __forceinline__ void done_chunk() {
    stream->release();
    if (threadIdx.x == kProducer)
      stream->fill(params->tasks, queue, queue_len, stream_steps);
  }
};

}  // namespace dev
}  // namespace mpk
