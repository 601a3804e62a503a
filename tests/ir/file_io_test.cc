// ir/file_io: bounded reads refuse endless or oversized files; safe writes never replace a
// non-regular file and leave no temporary file or half-written target behind on error.
#include "ir/file_io.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "ir/error.h"

namespace mpk {
namespace {

namespace fs = std::filesystem;

class FileIoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("mpk_file_io_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  int files_in_dir() const {
    int n = 0;
    for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir_)) ++n;
    return n;
  }
  fs::path dir_;
};

TEST_F(FileIoTest, ReadsWholeFileWithinLimit) {
  write_file_safely(path("a"), std::string("hello"));
  EXPECT_EQ(read_file_bounded(path("a"), 5, "module"), "hello");
}

TEST_F(FileIoTest, RefusesRegularFileOverLimitNamingIt) {
  write_file_safely(path("a"), std::string(3 << 20, 'x'));
  try {
    read_file_bounded(path("a"), 1 << 20, "cost file");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cost file '" + path("a") + "' is larger than 1 MiB"),
              std::string::npos)
        << e.what();
  }
}

TEST_F(FileIoTest, RefusesEndlessDeviceWithoutReadingForever) {
  EXPECT_THROW(read_file_bounded("/dev/zero", 1 << 20, "module"), Error);
}

TEST_F(FileIoTest, RefusesMissingAndDirectory) {
  EXPECT_THROW(read_file_bounded(path("missing"), 10, "module"), Error);
  EXPECT_THROW(read_file_bounded(dir_.string(), 10, "module"), Error);
}

TEST_F(FileIoTest, ReplacesRegularFileAndLeavesNoTemporary) {
  write_file_safely(path("a"), std::string("old"));
  write_file_safely(path("a"), std::string("new"));
  EXPECT_EQ(read_file_bounded(path("a"), 10, "f"), "new");
  EXPECT_EQ(files_in_dir(), 1);
}

TEST_F(FileIoTest, ErrorInWriterKeepsOldContentAndRemovesTemporary) {
  write_file_safely(path("a"), std::string("old"));
  EXPECT_THROW(write_file_safely(path("a"),
                                 [](std::ostream& out) {
                                   out << "half";
                                   throw Error("disk full");
                                 }),
               Error);
  EXPECT_EQ(read_file_bounded(path("a"), 10, "f"), "old");
  EXPECT_EQ(files_in_dir(), 1);
}

TEST_F(FileIoTest, WritesIntoFifoInPlaceInsteadOfReplacingIt) {
  const std::string fifo = path("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string got;
  std::thread reader([&] {
    std::ifstream in(fifo);
    std::getline(in, got);
  });
  write_file_safely(fifo, std::string("through the pipe\n"));
  reader.join();
  EXPECT_EQ(got, "through the pipe");
  struct stat st{};
  ASSERT_EQ(::stat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode)) << "the fifo was replaced by a regular file";
}

TEST_F(FileIoTest, DevNullStaysACharacterDevice) {
  write_file_safely("/dev/null", std::string("discarded"));
  struct stat st{};
  ASSERT_EQ(::stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
}

TEST_F(FileIoTest, RefusesToWriteOverDirectory) {
  EXPECT_THROW(write_file_safely(dir_.string(), std::string("x")), Error);
  EXPECT_TRUE(fs::is_directory(dir_));
}

}  // namespace
}  // namespace mpk
