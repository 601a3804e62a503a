// NCCL loaded at run time: the few host functions of NCCL 2.28+ that the tensor-parallel
// group (tp_group.h) calls, resolved with dlopen/dlsym from $MPK_NCCL_LIB, else
// "libnccl.so.2". Nothing links NCCL, so `mpk` runs on machines without it when tp is 1.
#pragma once

#include <nccl.h>
#include <nccl_device/core.h>

#include <string>

namespace mpk {

struct NcclLib {
  std::string path;  // what was loaded
  int version = 0;   // NCCL_VERSION_CODE of the library, e.g. 22809
  decltype(&::ncclGetErrorString) get_error_string = nullptr;
  decltype(&::ncclGetLastError) get_last_error = nullptr;
  decltype(&::ncclCommInitAll) comm_init_all = nullptr;
  decltype(&::ncclCommDestroy) comm_destroy = nullptr;
  decltype(&::ncclMemAlloc) mem_alloc = nullptr;
  decltype(&::ncclMemFree) mem_free = nullptr;
  decltype(&::ncclCommWindowRegister) comm_window_register = nullptr;
  decltype(&::ncclCommWindowDeregister) comm_window_deregister = nullptr;
  decltype(&::ncclGroupStart) group_start = nullptr;
  decltype(&::ncclGroupEnd) group_end = nullptr;
  ncclTeam_t (*team_lsa)(ncclComm_t) = nullptr;  // ncclTeamLsa: C++ overloads it, so no decltype

  // Throws mpk::Error("NCCL: <what>: <error string> (<NCCL's last error>)") unless ok.
  void check(ncclResult_t r, const char* what) const;
};

// Loads NCCL and resolves its functions, ncclGetVersion first. Throws mpk::Error naming
// the path when the library cannot be loaded, is older than 2.28 (with the version found)
// or lacks a function. The library stays loaded for the life of the process.
NcclLib load_nccl();

}  // namespace mpk
