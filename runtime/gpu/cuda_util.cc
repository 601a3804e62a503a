// CUDA runtime helpers. See runtime/gpu/cuda_util.h.
#include "runtime/gpu/cuda_util.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace mpk {

void cuda_check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  throw Error(std::string("CUDA: ") + what + ": " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
}

int gpu_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no driver" error
    return 0;
  }
  return n;
}

bool gpu_available() { return gpu_count() > 0; }

GpuInfo gpu_info() {
  if (!gpu_available()) throw Error("no CUDA GPU is available");
  cudaDeviceProp p{};
  MPK_CUDA(cudaGetDeviceProperties(&p, 0));
  GpuInfo g;
  g.name = p.name;
  g.sm_count = p.multiProcessorCount;
  g.cc_major = p.major;
  g.cc_minor = p.minor;
  int clock = 0, mem_clock = 0;
  if (cudaDeviceGetAttribute(&clock, cudaDevAttrClockRate, 0) == cudaSuccess) g.clock_khz = clock;
  if (cudaDeviceGetAttribute(&mem_clock, cudaDevAttrMemoryClockRate, 0) == cudaSuccess)
    g.mem_clock_khz = mem_clock;
  cudaGetLastError();
  g.smem_optin = static_cast<int64_t>(p.sharedMemPerBlockOptin);
  g.l2_bytes = p.l2CacheSize;
  g.global_mem = static_cast<int64_t>(p.totalGlobalMem);
  return g;
}

DeviceBuffer::DeviceBuffer(size_t bytes, const char* what) : bytes_(bytes) {
  if (bytes == 0) return;
  const cudaError_t e = cudaMalloc(&ptr_, bytes);
  if (e != cudaSuccess) {
    ptr_ = nullptr;
    throw Error(std::string("CUDA: cannot allocate ") + std::to_string(bytes) + " bytes for " + what +
                ": " + cudaGetErrorString(e));
  }
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) cudaFree(ptr_);
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (ptr_) cudaFree(ptr_);
    ptr_ = std::exchange(o.ptr_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
  }
  return *this;
}

void DeviceBuffer::upload(const void* src, size_t bytes, size_t offset) {
  if (offset + bytes > bytes_) throw Error("DeviceBuffer::upload out of bounds");
  if (!bytes) return;
  MPK_CUDA(cudaMemcpy(static_cast<char*>(ptr_) + offset, src, bytes, cudaMemcpyHostToDevice));
  MPK_CUDA(cudaStreamSynchronize(cudaStreamLegacy));
}

void DeviceBuffer::download(void* dst, size_t bytes, size_t offset) const {
  if (offset + bytes > bytes_) throw Error("DeviceBuffer::download out of bounds");
  if (bytes) MPK_CUDA(cudaMemcpy(dst, static_cast<const char*>(ptr_) + offset, bytes, cudaMemcpyDeviceToHost));
}

void DeviceBuffer::zero() {
  if (!bytes_) return;
  MPK_CUDA(cudaMemset(ptr_, 0, bytes_));
  MPK_CUDA(cudaStreamSynchronize(cudaStreamLegacy));
}

MappedHostBuffer::MappedHostBuffer(size_t bytes, const char* what) {
  const cudaError_t e = cudaHostAlloc(&host_, std::max<size_t>(bytes, 1), cudaHostAllocMapped);
  if (e != cudaSuccess) {
    host_ = nullptr;
    throw Error(std::string("CUDA: cannot allocate ") + std::to_string(bytes) + " bytes of mapped host memory for " +
                what + ": " + cudaGetErrorString(e));
  }
  std::memset(host_, 0, std::max<size_t>(bytes, 1));
  const cudaError_t m = cudaHostGetDevicePointer(&device_, host_, 0);
  if (m != cudaSuccess) {
    cudaFreeHost(host_);
    host_ = nullptr;
    cuda_check(m, "cudaHostGetDevicePointer");
  }
}

MappedHostBuffer::~MappedHostBuffer() {
  if (host_) cudaFreeHost(host_);
}

}  // namespace mpk
