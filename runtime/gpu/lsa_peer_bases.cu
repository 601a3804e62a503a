// The GPU group's setup kernel. See runtime/gpu/lsa_peer_bases.h.
#include "runtime/gpu/lsa_peer_bases.h"

#include <nccl_device.h>

#include "runtime/gpu/cuda_util.h"

namespace mpk {
namespace {

// Thread q: the address of LSA rank q's memory in this GPU's view of the window.
__global__ void lsa_peer_bases_kernel(ncclWindow_t window, uint64_t* bases) {
  const int q = static_cast<int>(threadIdx.x);
  bases[q] = reinterpret_cast<uint64_t>(ncclGetLsaPointer(window, 0, q));
}

}  // namespace

std::vector<uint64_t> lsa_peer_bases(ncclWindow_t window, int ranks) {
  DeviceBuffer bases(sizeof(uint64_t) * ranks, "the peer base addresses");
  lsa_peer_bases_kernel<<<1, ranks>>>(window, bases.as<uint64_t>());
  MPK_CUDA(cudaGetLastError());
  std::vector<uint64_t> out(ranks);
  bases.download(out.data(), sizeof(uint64_t) * ranks);
  return out;
}

}  // namespace mpk
