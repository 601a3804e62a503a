// The GPU group of tensor-parallel decode: one process, one host thread per GPU, rank r
// on CUDA device r. Each rank owns one arena of NCCL symmetric memory, and every rank
// knows the address at which it reaches every peer's arena by load and store over NVLink
// (NCCL 2.28's LSA pointers), so a megakernel reads and writes its peers' arenas directly
// (runtime/device/remote.cuh has the cross-GPU memory operations). NCCL is loaded at run
// time (runtime/gpu/nccl_lib.h); NVLink multicast (NVLS) is never used.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace mpk {

class TpGroup {
 public:
  // Creates the NCCL communicators of `ranks` GPUs and, on every rank, one symmetric arena
  // of `arena_bytes`, zeroed, and the peer base addresses of every arena as seen from every
  // rank. Throws mpk::Error naming the problem: ranks outside 1..8, an empty arena, NCCL
  // missing or older than 2.28, fewer GPUs than ranks, an NCCL error (with NCCL's text), a
  // peer that is not load/store reachable.
  TpGroup(int ranks, size_t arena_bytes);
  // Deregisters the windows, frees the arenas, destroys the communicators; never throws.
  // Every rank's kernels that use the arenas must have finished.
  ~TpGroup();
  TpGroup(const TpGroup&) = delete;
  TpGroup& operator=(const TpGroup&) = delete;

  int ranks() const;
  size_t arena_bytes() const;
  // The arena of `rank`: a device address on GPU `rank`.
  void* arena(int rank) const;
  // [q]: the address on GPU `rank` of rank q's arena (q == rank: arena(rank)).
  const std::vector<uint64_t>& peer_bases(int rank) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Runs fn(rank) for rank 0..ranks-1, each on its own thread with cudaSetDevice(rank) done
// first, and joins them all; then rethrows the first exception thrown (an mpk::Error keeps
// its message, prefixed "rank r: ").
void run_on_ranks(int ranks, const std::function<void(int rank)>& fn);

}  // namespace mpk
