// NCCL loaded at run time. See runtime/gpu/nccl_lib.h.
#include "runtime/gpu/nccl_lib.h"

#include <dlfcn.h>

#include <cstdlib>

#include "ir/error.h"

namespace mpk {
namespace {

constexpr int kMinVersion = 22800;  // NCCL_VERSION(2, 28, 0): the symmetric-memory device API

const char* const kHowToPoint =
    "tensor parallelism needs NCCL 2.28 or newer: set MPK_NCCL_LIB to the path of such a "
    "libnccl.so.2 (the Python package nvidia-nccl-cu13 has one in nvidia/nccl/lib/)";

// NCCL_VERSION_CODE as "major.minor.patch" (before 2.9 the code was X*1000 + Y*100 + Z).
std::string version_text(int v) {
  const bool old = v < 10000;
  const int major = old ? v / 1000 : v / 10000;
  const int minor = old ? v / 100 % 10 : v / 100 % 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(v % 100);
}

template <class F>
void resolve(void* handle, const std::string& path, const char* name, F& out) {
  out = reinterpret_cast<F>(dlsym(handle, name));
  if (!out) {
    dlclose(handle);
    throw Error("NCCL at " + path + " has no " + name + ": " + kHowToPoint);
  }
}

}  // namespace

void NcclLib::check(ncclResult_t r, const char* what) const {
  if (r == ncclSuccess) return;
  const std::string last = get_last_error(nullptr);
  throw Error(std::string("NCCL: ") + what + ": " + get_error_string(r) + (last.empty() ? "" : " (" + last + ")"));
}

NcclLib load_nccl() {
  NcclLib lib;
  const char* env = std::getenv("MPK_NCCL_LIB");
  lib.path = env && *env ? env : "libnccl.so.2";
  // Never closed once accepted: NCCL keeps threads and state that would outlive an unload.
  void* handle = dlopen(lib.path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) throw Error("cannot load NCCL from " + lib.path + " (" + dlerror() + "): " + kHowToPoint);
  decltype(&::ncclGetVersion) get_version = nullptr;
  resolve(handle, lib.path, "ncclGetVersion", get_version);
  if (get_version(&lib.version) != ncclSuccess || lib.version < kMinVersion) {
    dlclose(handle);
    throw Error("NCCL at " + lib.path + " is version " + version_text(lib.version) + ": " + kHowToPoint);
  }
  resolve(handle, lib.path, "ncclGetErrorString", lib.get_error_string);
  resolve(handle, lib.path, "ncclGetLastError", lib.get_last_error);
  resolve(handle, lib.path, "ncclCommInitAll", lib.comm_init_all);
  resolve(handle, lib.path, "ncclCommDestroy", lib.comm_destroy);
  resolve(handle, lib.path, "ncclMemAlloc", lib.mem_alloc);
  resolve(handle, lib.path, "ncclMemFree", lib.mem_free);
  resolve(handle, lib.path, "ncclCommWindowRegister", lib.comm_window_register);
  resolve(handle, lib.path, "ncclCommWindowDeregister", lib.comm_window_deregister);
  resolve(handle, lib.path, "ncclGroupStart", lib.group_start);
  resolve(handle, lib.path, "ncclGroupEnd", lib.group_end);
  resolve(handle, lib.path, "ncclTeamLsa", lib.team_lsa);
  return lib;
}

}  // namespace mpk
