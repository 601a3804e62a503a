// The tensor-parallel GPU group's refusals that need no GPU (labelled `runtime`, so the
// host suite runs them): ranks outside 1..8, an empty arena, and an NCCL that cannot be
// loaded or is not NCCL, each with one clear message.
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "ir/error.h"
#include "runtime/gpu/tp_group.h"

namespace mpk {
namespace {

// Sets MPK_NCCL_LIB for one test, then puts back what was there.
class NcclLibEnv {
 public:
  explicit NcclLibEnv(const char* path) {
    if (const char* old = std::getenv("MPK_NCCL_LIB")) old_ = old;
    setenv("MPK_NCCL_LIB", path, 1);
  }
  ~NcclLibEnv() {
    if (old_) setenv("MPK_NCCL_LIB", old_->c_str(), 1);
    else unsetenv("MPK_NCCL_LIB");
  }

 private:
  std::optional<std::string> old_;
};

std::string error_of(int ranks, size_t arena_bytes) {
  try {
    TpGroup g(ranks, arena_bytes);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(TpGroup, RefusesRanksOutsideOneToEight) {
  EXPECT_EQ(error_of(0, 4096), "TpGroup: ranks must be 1..8, got 0");
  EXPECT_EQ(error_of(9, 4096), "TpGroup: ranks must be 1..8, got 9");
}

TEST(TpGroup, RefusesAnEmptyArena) {
  EXPECT_EQ(error_of(1, 0), "TpGroup: the arena must not be empty (arena_bytes 0)");
}

TEST(TpGroup, SaysWhereNcclCouldNotBeLoadedFrom) {
  NcclLibEnv env("/nonexistent/libnccl.so.2");
  const std::string e = error_of(1, 4096);
  EXPECT_EQ(e.rfind("cannot load NCCL from /nonexistent/libnccl.so.2 (", 0), 0u) << e;
  EXPECT_NE(e.find("needs NCCL 2.28 or newer: set MPK_NCCL_LIB"), std::string::npos) << e;
}

TEST(TpGroup, RefusesALibraryThatIsNotNccl) {
  NcclLibEnv env("libm.so.6");
  EXPECT_EQ(error_of(1, 4096).rfind("NCCL at libm.so.6 has no ncclGetVersion: ", 0), 0u) << error_of(1, 4096);
}

}  // namespace
}  // namespace mpk
