// DeviceBuffer's contract with the runtime's non-blocking stream: once upload() or zero()
// returns, work on a stream that does not wait for the legacy stream (a copy back here,
// a kernel in the runtime: the weight-stream packing) sees the bytes. A pageable
// cudaMemcpy alone returns before its last DMA lands; packing then read zeros and the
// megakernel computed with them (seen under GPU time-slicing with three processes).
// Skipped without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "runtime/gpu/cuda_util.h"
#include "tests/gpu/gpu_test_util.h"

namespace mpk {
namespace {

// The last `tail` bytes of `b`, copied back at once on a non-blocking stream.
std::vector<uint8_t> tail_seen_by_another_stream(const DeviceBuffer& b, size_t tail) {
  const Stream s;
  const MappedHostBuffer out(tail, "the tail copied back");
  MPK_CUDA(cudaMemcpyAsync(out.device<uint8_t>(), b.as<uint8_t>() + b.bytes() - tail, tail, cudaMemcpyDeviceToDevice,
                           s.get()));
  MPK_CUDA(cudaStreamSynchronize(s.get()));
  const volatile uint8_t* host = out.host<uint8_t>();
  return std::vector<uint8_t>(host, host + tail);
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
