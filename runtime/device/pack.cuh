// Packing the weight stream's images: before the first launch the runtime copies every
// streamed weight box from its row-major [N, K] bf16 tensor into the contiguous,
// swizzled form the stream's linear copies expect (stream.cuh, codegen/
// stream_pack.h). One warp per box: lane l copies 16-byte piece l % 8 of rows
// l / 8, l / 8 + 4, ...; rows past the tensor's end are zero.
#pragma once

#include <cstdint>

#include "runtime/device/config.cuh"

namespace mpk {
namespace dev {

__device__ __forceinline__ void pack_boxes(const PackBox* __restrict__ boxes, int32_t count) {
  const int32_t warps = blockDim.x / 32;
  const int32_t lane = threadIdx.x & 31, j = lane & 7;
  for (int32_t i = blockIdx.x * warps + threadIdx.x / 32; i < count; i += gridDim.x * warps) {
    const PackBox b = boxes[i];
    unsigned char* dst = reinterpret_cast<unsigned char*>(b.dst);
    const unsigned char* src = reinterpret_cast<const unsigned char*>(b.src);
    for (int32_t r = lane / 8; r < b.rows; r += 4) {
      const uint4 v = r < b.valid_rows ? *reinterpret_cast<const uint4*>(src + r * b.row_stride + j * 16)
                                       : make_uint4(0, 0, 0, 0);
      *reinterpret_cast<uint4*>(dst + r * 128 + ((j ^ (r & 7)) << 4)) = v;
    }
  }
}

}  // namespace dev
}  // namespace mpk
