// Deterministic random weights: every element comes from a counter-based generator
// keyed by (seed, tensor name, element index), so the bits do not depend on the thread
// count or the machine.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <memory>
#include <thread>

#include "ir/checked.h"
#include "ir/fnv1a.h"
#include "runtime/cpu/bf16.h"
#include "runtime/cpu/memory_budget.h"
#include "runtime/weights/weights.h"

namespace mpk {
namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

struct Job {
  uint16_t* out;
  int64_t begin, end;
  uint64_t key;
  float center, half_width;  // uniform in [center - half_width, center + half_width)
};

void fill(const Job& j) {
  for (int64_t i = j.begin; i < j.end; ++i) {
    const uint64_t r = splitmix64(j.key + static_cast<uint64_t>(i));
    const float u = static_cast<float>(r >> 40) * (1.0f / 16777216.0f);  // [0, 1)
    j.out[i] = f32_to_bf16(j.center + (2.0f * u - 1.0f) * j.half_width);
  }
}

// Refuses weights that exceed the host memory budget before any is allocated.
void check_budget(const Module& m) {
  int64_t total = 0, largest = 0;
  const Tensor* big = nullptr;
  for (const Tensor& t : m.program.tensors) {
    if (t.role != TensorRole::kWeight) continue;
    const std::string what = "weight '" + t.name + "': its byte size";
    const int64_t bytes = checked_mul(checked_product(t.shape, what), 2, what);
    total = checked_add(total, bytes, "the random weights' bytes");
    if (bytes >= largest) largest = bytes, big = &t;
  }
  if (big)
    check_host_memory(total, "random bf16 weights (the largest: '" + big->name + "', " +
                                 format_mib(largest) + ")");
}

}  // namespace

Weights random_weights(const Module& m, uint64_t seed) {
  constexpr int64_t kChunk = int64_t{1} << 20;
  check_budget(m);
  Weights w;
  w.set_source("random(seed=" + std::to_string(seed) + ")");
  std::vector<Job> jobs;
  for (const Tensor& t : m.program.tensors) {
    if (t.role != TensorRole::kWeight) continue;
    const int64_t n = t.num_elements();
    std::shared_ptr<uint16_t[]> buf(new uint16_t[std::max<int64_t>(n, 1)]);
    float center = 1.0f, half = 0.1f;  // vectors: norm weights around 1
    if (t.shape.size() >= 2) {         // matrices [N, K]: std 1/sqrt(K)
      center = 0.0f;
      half = static_cast<float>(std::sqrt(3.0 / static_cast<double>(t.shape.back())));
    } else if (t.name.size() > 5 && t.name.compare(t.name.size() - 5, 5, ".bias") == 0) {
      center = 0.0f, half = 0.5f;  // biases (Qwen2's q/k/v) around 0
    }
    const uint64_t key = splitmix64(seed ^ Fnv1a().text(t.name).get());
    for (int64_t b = 0; b < n; b += kChunk)
      jobs.push_back({buf.get(), b, std::min(n, b + kChunk), key, center, half});
    w.add(t.name, WeightTensor{DType::kBF16, t.shape, buf.get(), ""},
          std::shared_ptr<const void>(buf, buf.get()), /*on_heap=*/true);
  }
  const unsigned threads =
      std::max(1u, std::min<unsigned>(std::thread::hardware_concurrency(), jobs.size()));
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i; (i = next.fetch_add(1)) < jobs.size();) fill(jobs[i]);
  };
  std::vector<std::thread> pool;
  for (unsigned i = 1; i < threads; ++i) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
  return w;
}

}  // namespace mpk
