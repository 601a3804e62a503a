// The main() of a fuzz target outside libFuzzer: feeds every file of the folders (or files)
// named on the command line to LLVMFuzzerTestOneInput once. Ordinary builds use it to replay
// the checked-in corpus, so every past finding stays a regression test without clang.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

int replay(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  int n = 0;
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path p(argv[i]);
    if (!std::filesystem::is_directory(p)) {
      n += replay(p);
      continue;
    }
    for (const auto& e : std::filesystem::recursive_directory_iterator(p))
      if (e.is_regular_file()) n += replay(e.path());
  }
  std::printf("replayed %d inputs without a crash\n", n);
  return n > 0 ? 0 : 1;
}
