// CUDA runtime helpers. See runtime/gpu/cuda_util.h.
#include "runtime/gpu/cuda_util.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>
#include <utility>
#include <vector>

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

Stream::Stream() { MPK_CUDA(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
Stream::~Stream() { cudaStreamDestroy(s_); }

EventPair::EventPair() {
  MPK_CUDA(cudaEventCreate(&start_));
  MPK_CUDA(cudaEventCreate(&stop_));
}

EventPair::~EventPair() {
  cudaEventDestroy(start_);
  cudaEventDestroy(stop_);
}

double EventPair::wait_ms(double timeout_s, const std::function<void()>& on_poll) const {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (true) {
    if (on_poll) on_poll();
    const cudaError_t e = cudaEventQuery(stop_);
    if (e == cudaSuccess) break;
    if (e != cudaErrorNotReady) cuda_check(e, "waiting for the megakernel");
    if (std::chrono::steady_clock::now() > deadline)
      throw Error("the kernel did not finish within " + std::to_string(timeout_s) + " s (host-side timeout)");
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  float ms = 0;
  MPK_CUDA(cudaEventElapsedTime(&ms, start_, stop_));
  return ms;
}

double measure_copy_bandwidth(size_t bytes, int reps) {
  DeviceBuffer a(bytes, "bandwidth test"), b(bytes, "bandwidth test");
  MPK_CUDA(cudaMemset(a.get(), 1, bytes));
  MPK_CUDA(cudaMemset(b.get(), 2, bytes));
  Stream s;
  std::vector<double> ms;
  for (int i = 0; i < reps + 2; ++i) {
    EventPair ev;
    MPK_CUDA(cudaEventRecord(ev.start(), s.get()));
    MPK_CUDA(cudaMemcpyAsync(b.get(), a.get(), bytes, cudaMemcpyDeviceToDevice, s.get()));
    MPK_CUDA(cudaEventRecord(ev.stop(), s.get()));
    const double t = ev.wait_ms(60);
    if (i >= 2) ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  const double med = ms[ms.size() / 2];
  return 2.0 * static_cast<double>(bytes) / (med * 1e-3);
}


}  // namespace mpk
