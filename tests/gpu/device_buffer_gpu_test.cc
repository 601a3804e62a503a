// DeviceBuffer's contract with the runtime's non-blocking stream: once upload() or zero()
// returns, work on a stream that does not wait for the legacy stream (a copy back here,
// a kernel in the runtime: the weight-stream packing) sees the bytes. A pageable
// cudaMemcpy alone returns before its last DMA lands; packing then read zeros and the
// megakernel computed with them (seen under GPU time-slicing with three processes).
// Skipped without a GPU.
#include <gtest/gtest.h>

#include <cstdint>
#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "runtime/gpu/cuda_util.h"
#include "tests/gpu/gpu_test_util.h"

namespace mpk {
namespace {

// The last `tail` bytes of `b`, copied back at once on a non-blocking stream.
std::vector<uint8_t> tail_seen_by_another_stream(const DeviceBuffer& b, size_t tail) {
  cudaStream_t s;
  MPK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  void* mem = nullptr;
  MPK_CUDA(cudaMallocHost(&mem, tail));
  auto* pinned = static_cast<uint8_t*>(mem);
  MPK_CUDA(cudaMemcpyAsync(pinned, b.as<uint8_t>() + b.bytes() - tail, tail, cudaMemcpyDeviceToHost, s));
  MPK_CUDA(cudaStreamSynchronize(s));
  std::vector<uint8_t> out(pinned, pinned + tail);
  MPK_CUDA(cudaFreeHost(pinned));
  MPK_CUDA(cudaStreamDestroy(s));
  return out;
}

TEST(DeviceBufferGpu, UploadAndZeroAreOnTheDeviceWhenTheyReturn) {
  MPK_REQUIRE_GPU();
  constexpr size_t kBytes = size_t{256} << 20, kTail = size_t{1} << 20;
  DeviceBuffer b(kBytes, "upload test");
  std::vector<uint8_t> host(kBytes);  // pageable, as the weights are
  for (int round = 1; round <= 4; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    std::iota(host.begin(), host.end(), static_cast<uint8_t>(round * 37));
    b.upload(host.data(), host.size());
    const std::vector<uint8_t> seen = tail_seen_by_another_stream(b, kTail);
    EXPECT_TRUE(std::equal(seen.begin(), seen.end(), host.end() - kTail));
    b.zero();
    const std::vector<uint8_t> zeros = tail_seen_by_another_stream(b, kTail);
    EXPECT_EQ(std::count(zeros.begin(), zeros.end(), 0), static_cast<long>(kTail));
  }
}

}  // namespace
}  // namespace mpk
