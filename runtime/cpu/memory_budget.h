// The host memory budget: the most heap memory one CPU run takes for its tensors (the
// tensor store) and its random weights, so that a module or config asking for more is
// refused with a message naming the tensor, instead of failing in the allocator or being
// killed for memory. Mapped checkpoint files do not count (the kernel pages them).
//
// The budget is 3/4 of physical memory, or MPK_MEMORY_BUDGET_MIB (a positive integer of
// MiB) when that environment variable is set.
#pragma once

#include <cstdint>
#include <string>

namespace mpk {

inline constexpr const char* kMemoryBudgetEnv = "MPK_MEMORY_BUDGET_MIB";

// The budget in bytes. Throws mpk::Error for a malformed MPK_MEMORY_BUDGET_MIB.
int64_t host_memory_budget();

// Throws mpk::Error "WHAT need(s) N MiB, over the host memory budget of B MiB (...)" when
// BYTES exceeds the budget.
void check_host_memory(int64_t bytes, const std::string& what);

// "12.5 MiB".
std::string format_mib(int64_t bytes);

}  // namespace mpk
