// The GPU group's setup kernel (tp_group.h): where the current GPU reaches every rank's
// memory of an NCCL symmetric window by load and store, read on the device with NCCL
// 2.28's ncclGetLsaPointer (an inline function of nccl_device.h: compiled from the
// headers, so nothing links NCCL).
#pragma once

#include <nccl.h>

#include <cstdint>
#include <vector>

namespace mpk {

// On the current GPU, which must own `window`: [q] is the address of LSA rank q's memory
// at the window's offset 0, for q < ranks. Waits for the kernel.
std::vector<uint64_t> lsa_peer_bases(ncclWindow_t window, int ranks);

}  // namespace mpk
