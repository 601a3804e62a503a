// Hostile module files and output paths given to mpk-opt: endless inputs are refused at a size
// limit, and writing never replaces a path that is not a regular file.
#include <sys/stat.h>

#include "tests/hostile/hostile_fixture.h"

namespace mpk::hostile {
namespace {

TEST_F(HostileTest, EndlessModuleInputIsRefusedAtTheSizeLimit) {
  expect_refused(run("mpk-opt", "/dev/zero", 60), "module '/dev/zero' is larger than 256 MiB");
}

TEST_F(HostileTest, OutputToFifoIsWrittenInPlace) {
  const std::string fifo = path("out.fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const CliResult r = run("mpk-opt", "tiny --emit=text -o '" + fifo + "' & cat '" + fifo + "' >'" +
                                         path("got") + "'; wait");
  expect_clean(r);
  EXPECT_NE(read(path("got")).find("mpk.module"), std::string::npos);
  struct stat st{};
  ASSERT_EQ(::stat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode)) << "the fifo was replaced by a regular file";
}

}  // namespace
}  // namespace mpk::hostile
