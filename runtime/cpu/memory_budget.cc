// The host memory budget (memory_budget.h).
#include "runtime/cpu/memory_budget.h"

#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "ir/error.h"

namespace mpk {
namespace {

// MPK_MEMORY_BUDGET_MIB at most 2^30 MiB (1 PiB); without physical memory figures, 16 GiB.
constexpr int64_t kMaxBudgetMib = int64_t{1} << 30;
constexpr int64_t kFallbackBudget = int64_t{16} << 30;

int64_t physical_memory() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0 || pages > INT64_MAX / page) return 0;
  return static_cast<int64_t>(pages) * page;
}

}  // namespace

int64_t host_memory_budget() {
  if (const char* env = std::getenv(kMemoryBudgetEnv)) {
    int64_t mib = 0;
    const char* end = env + std::strlen(env);
    auto [p, ec] = std::from_chars(env, end, mib);
    if (ec != std::errc() || p != end || *env == '\0' || mib < 1 || mib > kMaxBudgetMib)
      throw Error(std::string(kMemoryBudgetEnv) + " must be an integer number of MiB in 1.." +
                  std::to_string(kMaxBudgetMib) + ", got '" + env + "'");
    return mib << 20;
  }
  const int64_t phys = physical_memory();
  return phys > 0 ? phys / 4 * 3 : kFallbackBudget;
}

std::string format_mib(int64_t bytes) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return buf;
}

void check_host_memory(int64_t bytes, const std::string& what) {
  const int64_t budget = host_memory_budget();
  if (bytes <= budget) return;
  const bool from_env = std::getenv(kMemoryBudgetEnv) != nullptr;
  throw Error(what + " need " + format_mib(bytes) + ", over the host memory budget of " +
              format_mib(budget) + " (" + (from_env ? "" : "3/4 of physical memory; ") + "set " +
              kMemoryBudgetEnv + " to change it)");
}

}  // namespace mpk
