// Tests of the binary format (ir/serialize.h): lossless round trips of hand-built
// modules, rejection of malformed bytes, newer IR versions, out-of-range ids and enum
// values and duplicate attributes (each naming the source), verification on load,
// atomic saving, and format detection in load_module.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "ir/serialize.h"
#include "ir/text.h"
#include "ir/verifier.h"
#include "tests/ir/test_modules.h"

namespace mpk {
namespace {

using testing::expect_modules_equal;
using testing::tiny_module;

// Runs f, which must throw mpk::Error; returns the message.
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no mpk::Error thrown";
  return "";
}

std::string reload_error(const Module& m) {
  const std::string bytes = module_to_binary(m);
  return error_of([&] { module_from_binary(bytes, "bad.mpk"); });
}

class TempDir {
 public:
  TempDir() {
    path_ = std::filesystem::temp_directory_path() /
            ("mpk_serialize_test_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  size_t entries() const {
    return static_cast<size_t>(std::distance(std::filesystem::directory_iterator(path_), {}));
  }

 private:
  std::filesystem::path path_;
};

TEST(Serialize, BinaryRoundTripIsLossless) {
  const Module m = tiny_module();
  ASSERT_TRUE(verify_module(m).empty());
  const std::string bytes = module_to_binary(m);
  const Module back = module_from_binary(bytes, "tiny.mpk");
  expect_modules_equal(m, back);
  EXPECT_EQ(module_to_binary(back), bytes);  // deterministic
  EXPECT_EQ(print_module(back), print_module(m));
}

TEST(Serialize, ModuleWithoutGraphRoundTrips) {
  Module m = tiny_module();
  m.graph = TaskGraph{};
  testing::drop_unused_tensors(m.program);  // the argmax scratch
  m.attrs.clear();
  m.provenance = {};
  expect_modules_equal(m, module_from_binary(module_to_binary(m), "program.mpk"));
}

TEST(Serialize, GarbageBytesRejectedNamingTheSource) {
  const std::string msg = error_of([] { module_from_binary(std::string(64, '\xff'), "junk.mpk"); });
  EXPECT_NE(msg.find("junk.mpk: not a valid mpk module"), std::string::npos) << msg;
}

TEST(Serialize, EmptyBytesHaveNoVersion) {
  const std::string msg = error_of([] { module_from_binary("", "empty.mpk"); });
  EXPECT_EQ(msg, "empty.mpk: missing IR version");
}

TEST(Serialize, CorruptedBytesNeverCrash) {
  const std::string bytes = module_to_binary(tiny_module());
  std::mt19937 rng(7);
  std::uniform_int_distribution<size_t> pos(0, bytes.size() - 1);
  std::uniform_int_distribution<int> byte(0, 255);
  int rejected = 0;
  for (int i = 0; i < 400; ++i) {
    std::string b = bytes;
    if (i % 2) {
      b.resize(pos(rng));  // truncated
    } else {
      for (int k = 0; k < 3; ++k) b[pos(rng)] = static_cast<char>(byte(rng));
    }
    try {
      const Module m = module_from_binary(b, "corrupt.mpk");
      EXPECT_TRUE(verify_module(m).empty());  // anything accepted is verified
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).rfind("corrupt.mpk: ", 0), 0u) << e.what();
      ++rejected;
    }
  }
  EXPECT_GT(rejected, 300);
}

TEST(Serialize, NewerIrVersionRejected) {
  // Field 1 (version) as a varint: a later value replaces the earlier one.
  const std::string bytes = module_to_binary(tiny_module()) + std::string("\x08\x02", 2);
  EXPECT_EQ(error_of([&] { module_from_binary(bytes, "future.mpk"); }),
            "future.mpk: written by a newer mpk: IR version 2, this build reads up to 1");
  EXPECT_EQ(kIrVersion, 1);
}

TEST(Serialize, OutOfRangeIdsRejectedByName) {
  {
    Module m = tiny_module();
    m.program.ops[2].inputs[0] = 999;
    EXPECT_EQ(reload_error(m),
              "bad.mpk: operator 2 'L0.q_proj' input 0 refers to tensor 999, but there are 38 "
              "tensors");
  }
  {
    Module m = tiny_module();
    m.graph.tasks[4].op = 22;
    EXPECT_EQ(reload_error(m), "bad.mpk: task 4 op refers to operator 22, but there are 22 operators");
  }
  {
    Module m = tiny_module();
    m.graph.tasks[4].writes[0].tensor = -1;
    EXPECT_EQ(reload_error(m), "bad.mpk: task 4 write 0 refers to tensor -1, but there are 38 tensors");
  }
  {
    Module m = tiny_module();
    m.graph.events[3].consumers = {23};
    EXPECT_EQ(reload_error(m), "bad.mpk: event 3 consumer refers to task 23, but there are 23 tasks");
  }
  {
    Module m = tiny_module();
    m.graph.schedule.workers[1].push_back(40);
    EXPECT_EQ(reload_error(m),
              "bad.mpk: schedule worker 1 refers to task 40, but there are 23 tasks");
  }
}

TEST(Serialize, UnknownEnumValuesRejectedByName) {
  {
    Module m = tiny_module();
    m.program.tensors[1].dtype = static_cast<DType>(9);
    EXPECT_EQ(reload_error(m),
              "bad.mpk: tensor 1 'model.embed_tokens.weight' dtype has unknown value 10 (known: 1..4)");
  }
  {
    Module m = tiny_module();
    m.program.tensors[0].role = static_cast<TensorRole>(6);
    EXPECT_NE(reload_error(m).find("tensor 0 'tokens' role has unknown value 7"), std::string::npos);
  }
  {
    Module m = tiny_module();
    m.program.ops[0].kind = static_cast<OpKind>(kNumOpKinds);
    EXPECT_NE(reload_error(m).find("operator 0 'embed' kind has unknown value " + std::to_string(kNumOpKinds + 1)), std::string::npos);
  }
  {
    Module m = tiny_module();
    m.graph.tasks[0].kind = static_cast<TaskKind>(kNumTaskKinds);
    EXPECT_NE(reload_error(m).find("task 0 kind has unknown value " + std::to_string(kNumTaskKinds + 1)), std::string::npos);
  }
}

TEST(Serialize, AttributeProblemsRejected) {
  const std::string base = module_to_binary(tiny_module());
  // Field 3 (module attrs): Attr{key="zz", int_value=1}, twice.
  const std::string attr("\x1a\x06\x0a\x02zz\x10\x01", 8);
  EXPECT_EQ(error_of([&] { module_from_binary(base + attr + attr, "dup.mpk"); }),
            "dup.mpk: module has attribute 'zz' twice");
  // Attr{key="zz"} without a value.
  const std::string no_value("\x1a\x04\x0a\x02zz", 6);
  EXPECT_EQ(error_of([&] { module_from_binary(base + no_value, "novalue.mpk"); }),
            "novalue.mpk: module attribute 'zz' has no value");
}

TEST(Serialize, LoadingRunsTheVerifier) {
  Module m = tiny_module();
  m.graph.events[0].target = 3;
  const std::string msg = reload_error(m);
  EXPECT_EQ(msg.rfind("bad.mpk: verifier: structure.event-target: event 0 has target 3", 0), 0u)
      << msg;
}

TEST(Serialize, SaveIsAtomicAndLoadDetectsTheFormat) {
  TempDir dir;
  const Module m = tiny_module();
  const std::string bin = dir.file("m.mpk"), txt = dir.file("m.txt");
  save_module(m, bin, Format::kBinary);
  save_module(m, txt, Format::kText);
  EXPECT_EQ(dir.entries(), 2u);  // no temp files left behind
  expect_modules_equal(m, load_module(bin));
  expect_modules_equal(m, load_module(txt));

  std::ifstream in(txt);
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(ss.str(), print_module(m));

  // Overwriting replaces the file whole.
  Module smaller = m;
  smaller.graph = TaskGraph{};
  testing::drop_unused_tensors(smaller.program);  // the argmax scratch
  save_module(smaller, bin, Format::kBinary);
  EXPECT_TRUE(load_module(bin).graph.tasks.empty());
  EXPECT_EQ(dir.entries(), 2u);
}

TEST(Serialize, TextWithLeadingCommentsIsDetected) {
  TempDir dir;
  const std::string path = dir.file("commented.txt");
  std::ofstream(path) << "# a comment\n\n" << print_module(tiny_module());
  EXPECT_EQ(load_module(path).name, tiny_module().name);
}

TEST(Serialize, LoadVerifiesText) {
  TempDir dir;
  Module m = tiny_module();
  m.graph.events[1].step_distance = 2;
  const std::string path = dir.file("bad.txt");
  save_module(m, path, Format::kText);
  const std::string msg = error_of([&] { load_module(path); });
  EXPECT_EQ(msg.rfind(path + ": verifier: structure.event-distance", 0), 0u) << msg;
}

TEST(Serialize, IoErrorsNameThePath) {
  TempDir dir;
  const std::string missing = dir.file("nope.mpk");
  EXPECT_NE(error_of([&] { load_module(missing); }).find(missing), std::string::npos);
  EXPECT_NE(error_of([&] { load_module(dir.file("")); }).find("is a directory"), std::string::npos);
  const std::string no_dir = dir.file("no/such/dir/m.mpk");
  EXPECT_NE(error_of([&] { save_module(tiny_module(), no_dir, Format::kBinary); }).find(no_dir),
            std::string::npos);
  EXPECT_EQ(dir.entries(), 0u);
}

}  // namespace
}  // namespace mpk
