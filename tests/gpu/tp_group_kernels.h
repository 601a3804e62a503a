// The kernels of the GPU group's tests (tp_group_gpu_test.cc), compiled by nvcc in
// tp_group_kernels.cu: words written into and checked in every rank's arena through the
// peer base addresses, and a counter released on one GPU and acquired on another with
// runtime/device/remote.cuh. Each function runs on the calling thread's current GPU and
// returns once its kernel is done; every wait in a kernel gives up after `timeout_s`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace mpk::tptest {

// An arena holds slots of `words` 64-bit words each; slot s of every arena is written by
// rank s only, with words that depend on s and the position.

// Writes slot `slot` of every arena bases[q].
void write_slot(const std::vector<uint64_t>& bases, int slot, size_t words);

// For every arena bases[q]: how many words of its slots 0..slots-1 are not what their
// writer wrote.
std::vector<uint64_t> count_wrong_words(const std::vector<uint64_t>& bases, int slots, size_t words);

// The hand-off of `words` words from a producer GPU to a consumer GPU. Word 0 of each
// side's arena is its signal: the consumer raises its own once it polls, the producer
// waits for that, writes its data from word kHandoffData on, then releases its own
// counter (fence.acq_rel.sys, red.relaxed.sys); the consumer acquires it (ld.acquire.sys)
// and reads the data through the peer address.
constexpr size_t kHandoffData = 32;  // 256 bytes after the signal
bool produce(void* own_arena, uint64_t consumer_arena, size_t words, double timeout_s);  // saw the consumer?
struct Consumed {
  bool released = false;  // the producer's counter was seen raised
  uint64_t wrong_words = 0;
};
Consumed consume(void* own_arena, uint64_t producer_arena, size_t words, double timeout_s);

}  // namespace mpk::tptest
