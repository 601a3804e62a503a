// The tensor-parallel GPU group. See runtime/gpu/tp_group.h.
#include "runtime/gpu/tp_group.h"

#include <cstdlib>
#include <exception>
#include <mutex>
#include <string>
#include <thread>

#include "ir/ops/tensor_parallel.h"
#include "runtime/gpu/cuda_util.h"
#include "runtime/gpu/lsa_peer_bases.h"
#include "runtime/gpu/nccl_lib.h"

namespace mpk {

struct TpGroup::Impl {
  NcclLib nccl;
  int ranks = 0;
  size_t arena_bytes = 0;
  std::vector<ncclComm_t> comms;
  std::vector<void*> arenas;
  std::vector<ncclWindow_t> windows;
  std::vector<std::vector<uint64_t>> peer_bases;

  ~Impl();
  void create_comms();
  void create_arenas();
  void register_windows();
  void read_peer_bases();
  void check_rank(int rank) const;
};

TpGroup::TpGroup(int ranks, size_t arena_bytes) : impl_(std::make_unique<Impl>()) {
  if (ranks < 1 || ranks > kMaxTpRanks)
    throw Error("TpGroup: ranks must be 1.." + std::to_string(kMaxTpRanks) + ", got " + std::to_string(ranks));
  if (arena_bytes == 0) throw Error("TpGroup: the arena must not be empty (arena_bytes 0)");
  Impl& g = *impl_;
  g.nccl = load_nccl();
  const int gpus = gpu_count();
  if (gpus < ranks)
    throw Error("TpGroup: a group of " + std::to_string(ranks) + " ranks needs " + std::to_string(ranks) +
                " GPUs, found " + std::to_string(gpus));
  g.ranks = ranks;
  g.arena_bytes = arena_bytes;
  int caller_device = 0;
  MPK_CUDA(cudaGetDevice(&caller_device));
  // NVLink multicast (NVLS) must never be used: a program using it can take a shared host's
  // GPUs out of service. NCCL reads its parameters once, so this goes before the first
  // communicator, and overrides whatever the environment said. Nothing here calls
  // cuMulticastCreate or uses multimem.
  setenv("NCCL_NVLS_ENABLE", "0", 1);
  g.create_comms();
  g.create_arenas();
  g.register_windows();
  g.read_peer_bases();
  MPK_CUDA(cudaSetDevice(caller_device));
}

TpGroup::~TpGroup() = default;

// Releases what was created, in reverse order; errors are ignored (a destructor must not throw).
TpGroup::Impl::~Impl() {
  for (size_t r = 0; r < windows.size(); ++r)
    if (windows[r]) nccl.comm_window_deregister(comms[r], windows[r]);
  for (void* arena : arenas)
    if (arena) nccl.mem_free(arena);
  for (ncclComm_t comm : comms)
    if (comm) nccl.comm_destroy(comm);
}

// One communicator per GPU (devices 0..ranks-1), and every peer reachable by load/store.
void TpGroup::Impl::create_comms() {
  comms.assign(ranks, nullptr);
  const ncclResult_t r = nccl.comm_init_all(comms.data(), ranks, nullptr);
  if (r != ncclSuccess) comms.assign(ranks, nullptr);  // a failed initialization's handles are not destroyed
  nccl.check(r, "ncclCommInitAll");
  for (int q = 0; q < ranks; ++q) {
    const ncclTeam_t lsa = nccl.team_lsa(comms[q]);
    if (lsa.nRanks != ranks)
      throw Error("TpGroup: rank " + std::to_string(q) + " reaches " + std::to_string(lsa.nRanks) + " of " +
                  std::to_string(ranks) + " ranks by load/store (NCCL's LSA team): every GPU must reach every other");
  }
}

// One arena per rank from ncclMemAlloc (cuMem memory that a symmetric window can map), zeroed.
void TpGroup::Impl::create_arenas() {
  arenas.assign(ranks, nullptr);
  for (int r = 0; r < ranks; ++r) {
    MPK_CUDA(cudaSetDevice(r));
    void* arena = nullptr;
    nccl.check(nccl.mem_alloc(&arena, arena_bytes), "ncclMemAlloc");
    arenas[r] = arena;
    MPK_CUDA(cudaMemset(arena, 0, arena_bytes));
    MPK_CUDA(cudaDeviceSynchronize());
  }
}

// Registration is collective: from this one thread, every rank's call goes into one NCCL
// group, which registers them together at ncclGroupEnd.
void TpGroup::Impl::register_windows() {
  windows.assign(ranks, nullptr);
  nccl.check(nccl.group_start(), "ncclGroupStart");
  ncclResult_t first = ncclSuccess;
  for (int r = 0; r < ranks; ++r) {
    const ncclResult_t e =
        nccl.comm_window_register(comms[r], arenas[r], arena_bytes, &windows[r], NCCL_WIN_COLL_SYMMETRIC);
    if (first == ncclSuccess) first = e;
  }
  const ncclResult_t end = nccl.group_end();  // always: an open group would defer every later NCCL call
  nccl.check(first, "ncclCommWindowRegister");
  nccl.check(end, "ncclCommWindowRegister (ncclGroupEnd)");
  // Without symmetric support NCCL hands back a local registration (host memory), which
  // the setup kernel must not read: a symmetric window lives in the rank's GPU memory.
  for (int r = 0; r < ranks; ++r) {
    cudaPointerAttributes a{};
    const bool on_gpu = windows[r] && cudaPointerGetAttributes(&a, windows[r]) == cudaSuccess &&
                        a.type == cudaMemoryTypeDevice && a.device == r;
    cudaGetLastError();
    if (!on_gpu)
      throw Error("TpGroup: NCCL gave rank " + std::to_string(r) +
                  " no symmetric window: it needs CUDA peer access between all GPUs and its cuMem allocator "
                  "(NCCL_CUMEM_ENABLE and NCCL_WIN_ENABLE not 0)");
  }
}

// On every rank, the setup kernel reads where each peer's arena is mapped; its own arena
// keeps the address ncclMemAlloc gave it.
void TpGroup::Impl::read_peer_bases() {
  peer_bases.assign(ranks, {});
  for (int r = 0; r < ranks; ++r) {
    MPK_CUDA(cudaSetDevice(r));
    peer_bases[r] = lsa_peer_bases(windows[r], ranks);
    peer_bases[r][r] = reinterpret_cast<uint64_t>(arenas[r]);
  }
}

void TpGroup::Impl::check_rank(int rank) const {
  if (rank < 0 || rank >= ranks)
    throw Error("TpGroup: rank " + std::to_string(rank) + " outside 0.." + std::to_string(ranks - 1));
}

int TpGroup::ranks() const { return impl_->ranks; }
size_t TpGroup::arena_bytes() const { return impl_->arena_bytes; }

void* TpGroup::arena(int rank) const {
  impl_->check_rank(rank);
  return impl_->arenas[rank];
}

const std::vector<uint64_t>& TpGroup::peer_bases(int rank) const {
  impl_->check_rank(rank);
  return impl_->peer_bases[rank];
}

void run_on_ranks(int ranks, const std::function<void(int rank)>& fn) {
  std::mutex mutex;
  std::exception_ptr first;
  const auto keep = [&](std::exception_ptr e) {
    std::lock_guard<std::mutex> lock(mutex);
    if (!first) first = e;
  };
  std::vector<std::thread> threads;
  threads.reserve(ranks);
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      try {
        MPK_CUDA(cudaSetDevice(r));
        fn(r);
      } catch (const Error& e) {
        keep(std::make_exception_ptr(Error("rank " + std::to_string(r) + ": " + e.what())));
      } catch (...) {
        keep(std::current_exception());
      }
    });
  for (std::thread& t : threads) t.join();
  if (first) std::rethrow_exception(first);
}

}  // namespace mpk
