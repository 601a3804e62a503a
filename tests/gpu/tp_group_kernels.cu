// The kernels of the GPU group's tests. See tests/gpu/tp_group_kernels.h.
#include "tests/gpu/tp_group_kernels.h"

#include "ir/error.h"
#include "runtime/device/common.cuh"
#include "runtime/device/remote.cuh"
#include "runtime/gpu/cuda_util.h"

namespace mpk::tptest {
namespace {

constexpr int kMaxRanks = 8;  // kMaxTpRanks (ir/ops/tensor_parallel.h: C++20, and CUDA sources are C++17)
constexpr int kBlocks = 64;
constexpr int kThreads = 256;
constexpr int kProducerSlot = 1;  // the hand-off's data: what rank 1 would write as slot 1

struct Bases {
  uint64_t at[kMaxRanks];
  int count;
};

Bases to_bases(const std::vector<uint64_t>& v) {
  if (v.empty() || v.size() > kMaxRanks) throw Error("tp_group_kernels: 1..8 arenas, got " + std::to_string(v.size()));
  Bases b{};
  for (size_t q = 0; q < v.size(); ++q) b.at[q] = v[q];
  b.count = static_cast<int>(v.size());
  return b;
}

uint64_t timeout_ns(double s) { return static_cast<uint64_t>(s * 1e9); }

// Word i of slot s: differs between slots at every position, and is never 0 in practice.
__device__ __forceinline__ uint64_t slot_word(int s, uint64_t i) {
  return (static_cast<uint64_t>(s + 1) << 56) ^ (i * 0x9E3779B97F4A7C15ull) ^ 0x5A5Aull;
}

__global__ void write_slot_kernel(Bases b, int slot, size_t words) {
  for (int q = 0; q < b.count; ++q) {
    uint64_t* dst = reinterpret_cast<uint64_t*>(b.at[q]) + slot * words;
    for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < words; i += gridDim.x * blockDim.x)
      dst[i] = slot_word(slot, i);
  }
}

__global__ void count_wrong_kernel(Bases b, int slots, size_t words, unsigned long long* wrong) {
  for (int q = 0; q < b.count; ++q)
    for (int s = 0; s < slots; ++s) {
      const uint64_t* src = reinterpret_cast<const uint64_t*>(b.at[q]) + s * words;
      for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < words; i += gridDim.x * blockDim.x)
        if (src[i] != slot_word(s, i)) atomicAdd(&wrong[q], 1ull);
    }
}

// Spins with acquire loads until *signal is raised; false once timeout_ns have passed.
__device__ bool wait_raised(const unsigned long long* signal, uint64_t timeout_ns) {
  const uint64_t start = dev::global_timer_ns();
  while (dev::ld_acquire_sys_u64(signal) == 0)
    if (dev::global_timer_ns() - start > timeout_ns) return false;
  return true;
}

// One block: thread 0 waits for the consumer's signal, every thread writes its share of
// the data, the block synchronizes, and thread 0 releases the counter.
__global__ void produce_kernel(uint64_t* own, const unsigned long long* consumer_signal, size_t words,
                               uint64_t timeout_ns, int* saw_consumer) {
  __shared__ bool seen;
  if (threadIdx.x == 0) seen = wait_raised(consumer_signal, timeout_ns);
  __syncthreads();
  if (!seen) return;
  for (size_t i = threadIdx.x; i < words; i += blockDim.x) own[kHandoffData + i] = slot_word(kProducerSlot, i);
  __syncthreads();
  if (threadIdx.x == 0) {
    dev::fence_acq_rel_sys();
    dev::red_relaxed_sys_add(reinterpret_cast<unsigned long long*>(own), 1ull);
    *saw_consumer = 1;
  }
}

// One block: thread 0 raises the own signal and waits for the producer's counter, then
// every thread checks its share of the data. out: {released, wrong words}.
__global__ void consume_kernel(unsigned long long* own_signal, const uint64_t* producer, size_t words,
                               uint64_t timeout_ns, unsigned long long* out) {
  __shared__ bool released;
  if (threadIdx.x == 0) {
    dev::red_relaxed_sys_add(own_signal, 1ull);
    released = wait_raised(reinterpret_cast<const unsigned long long*>(producer), timeout_ns);
    out[0] = released;
  }
  __syncthreads();
  if (!released) return;
  for (size_t i = threadIdx.x; i < words; i += blockDim.x)
    if (producer[kHandoffData + i] != slot_word(kProducerSlot, i)) atomicAdd(&out[1], 1ull);
}

}  // namespace

void write_slot(const std::vector<uint64_t>& bases, int slot, size_t words) {
  write_slot_kernel<<<kBlocks, kThreads>>>(to_bases(bases), slot, words);
  MPK_CUDA(cudaGetLastError());
  MPK_CUDA(cudaDeviceSynchronize());
}

std::vector<uint64_t> count_wrong_words(const std::vector<uint64_t>& bases, int slots, size_t words) {
  const Bases b = to_bases(bases);
  DeviceBuffer wrong(sizeof(uint64_t) * bases.size(), "the wrong-word counts");
  wrong.zero();
  count_wrong_kernel<<<kBlocks, kThreads>>>(b, slots, words, wrong.as<unsigned long long>());
  MPK_CUDA(cudaGetLastError());
  std::vector<uint64_t> counts(bases.size());
  wrong.download(counts.data(), sizeof(uint64_t) * counts.size());
  return counts;
}

bool produce(void* own_arena, uint64_t consumer_arena, size_t words, double timeout_s) {
  DeviceBuffer saw(sizeof(int), "the producer's result");
  saw.zero();
  produce_kernel<<<1, kThreads>>>(static_cast<uint64_t*>(own_arena),
                                  reinterpret_cast<const unsigned long long*>(consumer_arena), words,
                                  timeout_ns(timeout_s), saw.as<int>());
  MPK_CUDA(cudaGetLastError());
  int seen = 0;
  saw.download(&seen, sizeof seen);
  return seen != 0;
}

Consumed consume(void* own_arena, uint64_t producer_arena, size_t words, double timeout_s) {
  DeviceBuffer out(2 * sizeof(uint64_t), "the consumer's result");
  out.zero();
  consume_kernel<<<1, kThreads>>>(static_cast<unsigned long long*>(own_arena),
                                  reinterpret_cast<const uint64_t*>(producer_arena), words, timeout_ns(timeout_s),
                                  out.as<unsigned long long>());
  MPK_CUDA(cudaGetLastError());
  uint64_t result[2] = {};
  out.download(result, sizeof result);
  return Consumed{result[0] != 0, result[1]};
}

}  // namespace mpk::tptest
