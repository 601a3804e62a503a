// CUDA runtime helpers for the GPU host runtime: checked calls that throw mpk::Error
// naming the call and the CUDA error, GPU detection that works without a driver (the
// runtime is linked statically), device facts, an owning device allocation, mapped
// host memory, a non-blocking stream, a pair of timing events, the copy bandwidth.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <string>

#include "ir/error.h"

namespace mpk {

// Throws mpk::Error("CUDA: <what>: <error name>: <error string>") unless ok.
void cuda_check(cudaError_t e, const char* what);
#define MPK_CUDA(call) ::mpk::cuda_check((call), #call)

// The CUDA devices this process sees (0 without a driver).
int gpu_count();
// True when at least one CUDA device is usable (false without a driver).
bool gpu_available();

struct GpuInfo {
  std::string name;
  int sm_count = 0;
  int cc_major = 0, cc_minor = 0;
  int64_t clock_khz = 0;
  int64_t mem_clock_khz = 0;
  int64_t smem_optin = 0;  // shared memory per block with opt-in
  int64_t l2_bytes = 0;
  int64_t global_mem = 0;
};

// Device 0's facts; throws mpk::Error when there is no GPU.
GpuInfo gpu_info();

// An owning cudaMalloc'ed buffer.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes, const char* what);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) {
    o.ptr_ = nullptr;
    o.bytes_ = 0;
  }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* get() const { return ptr_; }
  template <class T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  uint64_t address() const { return reinterpret_cast<uint64_t>(ptr_); }
  size_t bytes() const { return bytes_; }
  // upload and zero return once the bytes are on the device, so that work on any stream
  // sees them: the runtime's kernels run on a non-blocking stream, which does not wait for
  // the legacy stream that cudaMemcpy and cudaMemset use, and a copy from pageable memory
  // may return before its last DMA has landed.
  void upload(const void* src, size_t bytes, size_t offset = 0);
  void download(void* dst, size_t bytes, size_t offset = 0) const;
  void zero();

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// An owning cudaHostAlloc'ed buffer mapped into the device's address space: what the
// device writes there the host reads while a kernel runs.
class MappedHostBuffer {
 public:
  MappedHostBuffer(size_t bytes, const char* what);
  ~MappedHostBuffer();
  MappedHostBuffer(const MappedHostBuffer&) = delete;
  MappedHostBuffer& operator=(const MappedHostBuffer&) = delete;
  template <class T>
  volatile T* host() const {
    return static_cast<volatile T*>(host_);
  }
  template <class T>
  T* device() const {
    return static_cast<T*>(device_);
  }

 private:
  void* host_ = nullptr;
  void* device_ = nullptr;
};

// An owning non-blocking stream: the runtime's launches go on one (see DeviceBuffer).
class Stream {
 public:
  Stream();
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

// Two owning events around a launch.
class EventPair {
 public:
  EventPair();
  ~EventPair();
  EventPair(const EventPair&) = delete;
  EventPair& operator=(const EventPair&) = delete;
  cudaEvent_t start() const { return start_; }
  cudaEvent_t stop() const { return stop_; }
  // Waits for stop (polling, so a runaway kernel cannot hang the host past `timeout_s`;
  // `on_poll` runs at every poll) and returns the milliseconds between the events.
  double wait_ms(double timeout_s, const std::function<void()>& on_poll = {}) const;

 private:
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

// Device-to-device copy bandwidth of device 0, counting bytes read plus written, in
// bytes per second: the median of `reps` copies of a `bytes`-sized buffer.
double measure_copy_bandwidth(size_t bytes = size_t{1} << 30, int reps = 10);

}  // namespace mpk
