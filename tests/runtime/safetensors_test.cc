// safetensors reading and writing, checkpoint directories (single file, sharded), and
// clear errors for bad checkpoints, including a fuzz test of corrupted headers.
#include "runtime/weights/safetensors.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <set>

#include "ir/error.h"
#include "runtime/cpu/bf16.h"
#include "runtime/weights/weights.h"
#include "tests/runtime/runtime_test_util.h"

namespace mpk {
namespace {

namespace fs = std::filesystem;

std::string read_file(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
void write_file(const std::string& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// A small image: three tensors of three dtypes.
std::string small_image() {
  const std::string dir = test::scratch_dir("small_image");
  std::vector<uint16_t> a(6), c(5);
  std::vector<float> b(4);
  for (size_t i = 0; i < a.size(); ++i) a[i] = f32_to_bf16(0.5f * static_cast<float>(i));
  for (size_t i = 0; i < b.size(); ++i) b[i] = 1.25f * static_cast<float>(i);
  for (size_t i = 0; i < c.size(); ++i) c[i] = f32_to_f16(static_cast<float>(i) - 2);
  write_safetensors(dir + "/x.safetensors",
                    {{"a", DType::kBF16, {2, 3}, a.data()},
                     {"b", DType::kF32, {4}, b.data()},
                     {"c", DType::kF16, {5}, c.data()}},
                    {{"format", "pt"}});
  return read_file(dir + "/x.safetensors");
}

std::string expect_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected mpk::Error";
  return "";
}

TEST(Safetensors, WriteThenReadRoundTrips) {
  const std::string img = small_image();
  const auto* bytes = reinterpret_cast<const uint8_t*>(img.data());
  const SafetensorsHeader h = parse_safetensors(bytes, img.size(), "x");
  ASSERT_EQ(h.tensors.size(), 3u);
  EXPECT_EQ(h.metadata.at("format"), "pt");
  EXPECT_EQ(h.data_start % 8, 0u);
  const SafetensorsEntry& a = h.tensors.at("a");
  EXPECT_EQ(a.dtype, "BF16");
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 3}));
  uint16_t v;
  std::memcpy(&v, bytes + a.offset + 2 * 5, 2);
  EXPECT_EQ(bf16_to_f32(v), 2.5f);
  const SafetensorsEntry& b = h.tensors.at("b");
  EXPECT_EQ(*b.mpk_dtype, DType::kF32);
  EXPECT_EQ(b.offset % 4, 0u);
  float f;
  std::memcpy(&f, bytes + b.offset + 4 * 3, 4);
  EXPECT_EQ(f, 3.75f);
  const SafetensorsEntry& c = h.tensors.at("c");
  std::memcpy(&v, bytes + c.offset, 2);
  EXPECT_EQ(f16_to_f32(v), -2.0f);
}

TEST(Safetensors, ErrorsNameTheProblem) {
  const std::string img = small_image();
  auto parse = [](const std::string& s) {
    return [s] { parse_safetensors(reinterpret_cast<const uint8_t*>(s.data()), s.size(), "f.st"); };
  };
  EXPECT_NE(expect_error(parse("abc")).find("truncated"), std::string::npos);
  EXPECT_NE(expect_error(parse(img.substr(0, 20))).find("header claims"), std::string::npos);
  EXPECT_NE(expect_error(parse(img.substr(0, img.size() - 3))).find("run past the end"), std::string::npos);
  std::string bad = img;
  bad[8] = '[';
  EXPECT_NE(expect_error(parse(bad)).find("f.st"), std::string::npos);
  // A header whose offsets run past the file.
  std::string hdr = R"({"t":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})";
  std::string img2(8, '\0');
  img2[0] = static_cast<char>(hdr.size());
  img2 += hdr + std::string(8, '\0');
  EXPECT_NE(expect_error(parse(img2)).find("tensor 't'"), std::string::npos);
  EXPECT_NE(expect_error(parse(img2)).find("run past"), std::string::npos);
  // Shape and byte count disagree.
  hdr = R"({"t":{"dtype":"F32","shape":[3],"data_offsets":[0,16]}})";
  img2 = std::string(8, '\0');
  img2[0] = static_cast<char>(hdr.size());
  img2 += hdr + std::string(16, '\0');
  EXPECT_NE(expect_error(parse(img2)).find("need 12"), std::string::npos);
  // Unknown dtype, negative shape, absurd shape.
  for (const std::string h : {R"({"t":{"dtype":"Q7","shape":[1],"data_offsets":[0,1]}})",
                              R"({"t":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})",
                              R"({"t":{"dtype":"F32","shape":[4294967296,4294967296,16],"data_offsets":[0,4]}})",
                              R"({"t":{"dtype":"F32","shape":[1],"data_offsets":[4,0]}})",
                              R"({"t":[[[[[[1]]]]]]})", R"([1,2])"}) {
    std::string im(8, '\0');
    im[0] = static_cast<char>(h.size());
    im += h + std::string(16, '\0');
    EXPECT_NE(expect_error(parse(im)).find("f.st: "), std::string::npos) << h;
  }
}

// An image with the header `h` (a JSON object) and `data_bytes` zero bytes of data.
std::string image_of(const std::string& h, size_t data_bytes) {
  std::string im(8, '\0');
  for (int i = 0; i < 8; ++i) im[i] = static_cast<char>(static_cast<uint64_t>(h.size()) >> (8 * i));
  return im + h + std::string(data_bytes, '\0');
}

std::string parse_error(const std::string& img) {
  return expect_error([&] { parse_safetensors(reinterpret_cast<const uint8_t*>(img.data()), img.size(), "f.st"); });
}

TEST(Safetensors, HeaderLengthOverTheFormatLimitIsRefused) {
  std::string img(16, '\0');
  const uint64_t n = 100'000'001;
  for (int i = 0; i < 8; ++i) img[i] = static_cast<char>(n >> (8 * i));
  EXPECT_NE(parse_error(img).find("header length 100000001 exceeds the format's limit of 100000000 bytes"),
            std::string::npos);
}

// The format: data_offsets tile the data in order of offset, from 0 to the end of the file.
TEST(Safetensors, OffsetsMustTileTheData) {
  auto two = [](const std::string& a, const std::string& b) {
    return R"({"a":{"dtype":"F32","shape":[2],"data_offsets":)" + a +
           R"(},"b":{"dtype":"F32","shape":[2],"data_offsets":)" + b + "}}";
  };
  EXPECT_NE(parse_error(image_of(two("[0,8]", "[0,8]"), 8)).find("tensor 'b' (data_offsets [0, 8]) overlaps tensor 'a'"),
            std::string::npos);
  EXPECT_NE(parse_error(image_of(two("[0,8]", "[4,12]"), 12)).find("overlaps tensor 'a' (data_offsets [0, 8])"),
            std::string::npos);
  EXPECT_NE(parse_error(image_of(two("[0,8]", "[12,20]"), 20)).find("tensor 'b' (data_offsets [12, 20]) leaves 4 bytes unused"),
            std::string::npos);
  EXPECT_NE(parse_error(image_of(two("[4,12]", "[12,20]"), 20)).find("leaves 4 bytes unused before it"),
            std::string::npos);
  EXPECT_NE(parse_error(image_of(two("[0,8]", "[8,16]"), 20)).find("4 trailing bytes after the last tensor"),
            std::string::npos);
  EXPECT_NE(parse_error(image_of("{}", 1)).find("1 trailing bytes"), std::string::npos);
  // Out of header order, and empty tensors anywhere on the tiling: accepted.
  const std::string ok = image_of(
      R"({"z":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"e":{"dtype":"BF16","shape":[0,3],"data_offsets":[8,8]},)"
      R"("a":{"dtype":"F32","shape":[1],"data_offsets":[8,12]},"f":{"dtype":"F32","shape":[0],"data_offsets":[12,12]}})",
      12);
  EXPECT_EQ(parse_safetensors(reinterpret_cast<const uint8_t*>(ok.data()), ok.size(), "ok").tensors.size(), 4u);
  const std::string empty = image_of("{}", 0);
  EXPECT_TRUE(parse_safetensors(reinterpret_cast<const uint8_t*>(empty.data()), empty.size(), "e").tensors.empty());
}

TEST(Safetensors, LongShapeListsAndHugeShapesAreRefused) {
  EXPECT_NE(parse_error(image_of(R"({"t":{"dtype":"F32","shape":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1],"data_offsets":[0,4]}})", 4))
                .find("a list of more than 16 entries"),
            std::string::npos);
  EXPECT_NE(parse_error(image_of(R"({"t":{"dtype":"F32","shape":[9223372036854775808],"data_offsets":[0,4]}})", 4))
                .find("beyond int64"),
            std::string::npos);
  EXPECT_NE(parse_error(image_of(R"({"t":{"dtype":"F64","shape":[2305843009213693952],"data_offsets":[0,4]}})", 4))
                .find("overflows int64"),
            std::string::npos);
}

// Corrupts the image many ways; every result must load cleanly or throw mpk::Error,
// and a clean load must describe only bytes inside the image (read them all to let a
// sanitizer see it).
TEST(Safetensors, FuzzCorruptedHeaders) {
  const std::string img = small_image();
  const uint64_t header_len = img.size() > 8 ? static_cast<uint8_t>(img[0]) | (static_cast<uint8_t>(img[1]) << 8) : 0;
  std::mt19937_64 rng(1234);
  int loaded = 0, rejected = 0;
  for (int iter = 0; iter < 6000; ++iter) {
    std::string s = img;
    switch (iter % 6) {
      case 0:  // flip a few header bytes
        for (int k = 0, n = 1 + static_cast<int>(rng() % 4); k < n; ++k)
          s[8 + rng() % header_len] = static_cast<char>(rng());
        break;
      case 1:  // truncate anywhere
        s.resize(rng() % s.size());
        break;
      case 2:  // a random or nearby header length
        for (int k = 0; k < 8; ++k) s[k] = static_cast<char>(k < 2 || rng() % 4 == 0 ? rng() : 0);
        break;
      case 3: {  // replace a digit with a random digit or a run of nines
        size_t pos = 8 + rng() % header_len;
        while (pos < 8 + header_len && !std::isdigit(static_cast<unsigned char>(s[pos]))) ++pos;
        if (pos < 8 + header_len) s[pos] = rng() % 2 ? static_cast<char>('0' + rng() % 10) : '9';
        if (rng() % 3 == 0) s.insert(pos, std::string(1 + rng() % 25, '9'));
        break;
      }
      case 4: {  // splice random tokens into the JSON
        static const char* kTokens[] = {"[", "]", "{", "}", ",", ":", "\"", "-1", "1e999", "null",
                                        "\"dtype\"", "\"shape\"", "[[[[[[[[", "18446744073709551615"};
        const size_t pos = 8 + rng() % header_len;
        s.insert(pos, kTokens[rng() % (sizeof kTokens / sizeof *kTokens)]);
        break;
      }
      case 5:  // overwrite a random span of the header with random bytes
        for (size_t k = 8 + rng() % header_len, e = std::min<size_t>(k + rng() % 16, 8 + header_len); k < e; ++k)
          s[k] = static_cast<char>(rng());
        break;
    }
    const auto* bytes = reinterpret_cast<const uint8_t*>(s.data());
    try {
      const SafetensorsHeader h = parse_safetensors(bytes, s.size(), "fuzz");
      uint64_t sum = 0;
      for (const auto& [name, e] : h.tensors) {
        ASSERT_LE(e.offset + e.size, s.size()) << name;
        ASSERT_GE(e.offset, h.data_start);
        for (uint64_t i = 0; i < e.size; ++i) sum += bytes[e.offset + i];
      }
      (void)sum;
      ++loaded;
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).rfind("fuzz: ", 0), 0u) << e.what();
      ++rejected;
    }
  }
  EXPECT_GT(rejected, 3000);
  EXPECT_GT(loaded, 0);
}

TEST(Safetensors, TruncatedAndEmptyFilesOnDisk) {
  const std::string dir = test::scratch_dir("trunc");
  const std::string img = small_image();
  for (size_t len : {size_t{0}, size_t{5}, size_t{30}, img.size() - 1}) {
    const std::string p = dir + "/t" + std::to_string(len) + ".safetensors";
    write_file(p, img.substr(0, len));
    const std::string msg = expect_error([&] { SafetensorsFile::open(p); });
    EXPECT_EQ(msg.rfind(p + ": ", 0), 0u) << msg;
  }
  EXPECT_NE(expect_error([&] { SafetensorsFile::open(dir + "/nope.safetensors"); }).find("cannot open"),
            std::string::npos);
}

// A write that fails midway (a file size limit below the file's size) leaves the old file
// whole and no temporary file behind.
TEST(Safetensors, FailedWriteKeepsTheOldFile) {
  const std::string dir = test::scratch_dir("failed_write");
  const std::string p = dir + "/x.safetensors";
  write_file(p, "old");
  std::vector<float> big(1 << 16, 1.0f);
  struct rlimit old {};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  const auto saved = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit lim = old;
  lim.rlim_cur = 4096;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &lim), 0);
  const std::string msg = expect_error([&] { write_safetensors(p, {{"t", DType::kF32, {1 << 16}, big.data()}}); });
  ::setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, saved);
  EXPECT_NE(msg.find(p), std::string::npos) << msg;
  EXPECT_EQ(read_file(p), "old");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
}

class Checkpoint : public ::testing::Test {
 protected:
  Module m_ = test::preset_module("tiny");
  Weights w_ = random_weights(m_, 3);
};

void expect_same_weights(const Module& m, const Weights& a, const Weights& b) {
  for (const Tensor& t : m.program.tensors) {
    if (t.role != TensorRole::kWeight) continue;
    const WeightTensor& x = a.get(t.name);
    const WeightTensor& y = b.get(t.name);
    ASSERT_EQ(x.shape, y.shape) << t.name;
    ASSERT_EQ(x.dtype, y.dtype) << t.name;
    ASSERT_EQ(std::memcmp(x.data, y.data, x.num_bytes()), 0) << t.name;
  }
}

TEST_F(Checkpoint, SingleFileRoundTrip) {
  const std::string dir = test::scratch_dir("single");
  write_checkpoint(m_, w_, dir);
  EXPECT_TRUE(fs::exists(dir + "/config.json"));
  const Weights back = load_weights(m_, dir);
  expect_same_weights(m_, w_, back);
  EXPECT_FALSE(back.get("model.norm.weight").file.empty());
  // The config.json path works as well as the directory; the importer reads it back.
  expect_same_weights(m_, w_, load_weights(m_, dir + "/config.json"));
  const ModelConfig c = load_model_config(dir + "/config.json");
  EXPECT_EQ(c.hidden, 256);
  EXPECT_EQ(c.vocab, 512);
}

TEST_F(Checkpoint, ShardedRoundTripAndMissingShard) {
  const std::string dir = test::scratch_dir("sharded");
  write_checkpoint(m_, w_, dir, 3);
  EXPECT_TRUE(fs::exists(dir + "/model.safetensors.index.json"));
  EXPECT_TRUE(fs::exists(dir + "/model-00003-of-00003.safetensors"));
  EXPECT_FALSE(fs::exists(dir + "/model.safetensors"));
  const Weights back = load_weights(m_, dir);
  expect_same_weights(m_, w_, back);
  std::set<std::string> files;
  for (const auto& [n, t] : back.tensors()) files.insert(t.file);
  EXPECT_EQ(files.size(), 3u);
  fs::remove(dir + "/model-00002-of-00003.safetensors");
  const std::string msg = expect_error([&] { load_weights(m_, dir); });
  EXPECT_NE(msg.find("model-00002-of-00003.safetensors"), std::string::npos) << msg;
}

TEST_F(Checkpoint, WithoutIndexAllShardsAreSearched) {
  const std::string dir = test::scratch_dir("noindex");
  write_checkpoint(m_, w_, dir, 2);
  fs::remove(dir + "/model.safetensors.index.json");
  expect_same_weights(m_, w_, load_weights(m_, dir));
}

// Rewrites model.safetensors of `dir` with `edit` applied to the list of tensors.
void rewrite(const Module& m, const Weights& w, const std::string& dir,
             const std::function<void(std::vector<SafetensorsTensorOut>&)>& edit) {
  std::vector<SafetensorsTensorOut> ts;
  for (const Tensor& t : m.program.tensors)
    if (t.role == TensorRole::kWeight) {
      const WeightTensor& x = w.get(t.name);
      ts.push_back({t.name, x.dtype, x.shape, x.data});
    }
  edit(ts);
  write_safetensors(dir + "/model.safetensors", ts);
}

TEST_F(Checkpoint, MissingTensorIsNamed) {
  const std::string dir = test::scratch_dir("missing");
  write_checkpoint(m_, w_, dir);
  rewrite(m_, w_, dir, [](auto& ts) {
    ts.erase(std::remove_if(ts.begin(), ts.end(),
                            [](auto& t) { return t.name == "model.layers.1.mlp.up_proj.weight"; }),
             ts.end());
  });
  const std::string msg = expect_error([&] { load_weights(m_, dir); });
  EXPECT_NE(msg.find("missing tensor 'model.layers.1.mlp.up_proj.weight'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("model.safetensors"), std::string::npos) << msg;
}

TEST_F(Checkpoint, ShapeAndDtypeMismatchesAreNamed) {
  const std::string dir = test::scratch_dir("mismatch");
  write_checkpoint(m_, w_, dir);
  rewrite(m_, w_, dir, [](auto& ts) {
    for (auto& t : ts)
      if (t.name == "model.layers.0.self_attn.k_proj.weight") t.shape = {256, 128};
  });
  std::string msg = expect_error([&] { load_weights(m_, dir); });
  EXPECT_NE(msg.find("'model.layers.0.self_attn.k_proj.weight' has shape [256, 128]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[128, 256]"), std::string::npos) << msg;

  std::vector<int32_t> ints(256, 1);
  rewrite(m_, w_, dir, [&](auto& ts) {
    for (auto& t : ts)
      if (t.name == "model.norm.weight") {
        t.dtype = DType::kI32;
        t.data = ints.data();
      }
  });
  msg = expect_error([&] { load_weights(m_, dir); });
  EXPECT_NE(msg.find("'model.norm.weight' has dtype I32"), std::string::npos) << msg;
}

TEST_F(Checkpoint, TruncatedFileIsNamed) {
  const std::string dir = test::scratch_dir("truncated");
  write_checkpoint(m_, w_, dir);
  const std::string p = dir + "/model.safetensors";
  fs::resize_file(p, fs::file_size(p) - 1000);
  const std::string msg = expect_error([&] { load_weights(m_, dir); });
  EXPECT_EQ(msg.rfind(p + ": ", 0), 0u) << msg;
  EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
}

TEST_F(Checkpoint, EmptyDirectoryAndMalformedIndex) {
  const std::string dir = test::scratch_dir("empty");
  EXPECT_NE(expect_error([&] { load_weights(m_, dir); }).find("no *.safetensors"), std::string::npos);
  write_file(dir + "/model.safetensors.index.json", "{\"weight_map\": {\"a\": \"../etc/passwd\"}}");
  EXPECT_NE(expect_error([&] { load_weights(m_, dir); }).find("outside the directory"), std::string::npos);
  write_file(dir + "/model.safetensors.index.json", "{not json");
  EXPECT_NE(expect_error([&] { load_weights(m_, dir); }).find("malformed JSON"), std::string::npos);
}

TEST_F(Checkpoint, IndexIsReadBoundedAndValidated) {
  const std::string dir = test::scratch_dir("index_checks");
  write_checkpoint(m_, w_, dir, 2);
  const std::string index = dir + "/model.safetensors.index.json";
  write_file(index, R"({"weight_map": {"model.norm.weight": "config.json"}})");
  EXPECT_NE(expect_error([&] { load_weights(m_, dir); }).find("names 'config.json', not a .safetensors file"),
            std::string::npos);
  write_file(index, R"({"weight_map": {"model.norm.weight": ".."}})");
  EXPECT_NE(expect_error([&] { load_weights(m_, dir); }).find("outside the directory"), std::string::npos);
  write_file(index, "{\"weight_map\": {}, \"metadata\": " + std::string(5000, '[') + std::string(5000, ']') + "}");
  EXPECT_NE(expect_error([&] { load_weights(m_, dir); }).find("nested deeper than 4 levels"), std::string::npos);
  write_file(index, "{\"weight_map\": {\"a\": 1e999}}");
  EXPECT_NE(expect_error([&] { load_weights(m_, dir); }).find("malformed JSON"), std::string::npos);
}

TEST_F(Checkpoint, F32AndF16CheckpointsLoadWithTheirDtype) {
  const std::string dir = test::scratch_dir("f32");
  std::vector<std::vector<float>> f32s;
  std::vector<std::vector<uint16_t>> f16s;
  for (DType dt : {DType::kF32, DType::kF16}) {
    write_checkpoint(m_, w_, dir);
    f32s.clear();
    f16s.clear();
    rewrite(m_, w_, dir, [&](auto& ts) {
      for (auto& t : ts) {
        const auto* src = static_cast<const uint16_t*>(t.data);
        const int64_t n = w_.get(t.name).num_elements();
        if (dt == DType::kF32) {
          f32s.emplace_back(n);
          for (int64_t i = 0; i < n; ++i) f32s.back()[i] = bf16_to_f32(src[i]);
          t.data = f32s.back().data();
        } else {
          f16s.emplace_back(n);
          for (int64_t i = 0; i < n; ++i) f16s.back()[i] = f32_to_f16(bf16_to_f32(src[i]));
          t.data = f16s.back().data();
        }
        t.dtype = dt;
      }
    });
    const Weights back = load_weights(m_, dir);
    EXPECT_EQ(back.get("lm_head.weight").dtype, dt);
    EXPECT_EQ(back.get("lm_head.weight").num_bytes(), 512 * 256 * size_of(dt));
  }
}

TEST(RandomWeights, DeterministicAndScaled) {
  const Module m = test::preset_module("tiny");
  const Weights a = random_weights(m, 7), b = random_weights(m, 7), c = random_weights(m, 8);
  const WeightTensor& wa = a.get("model.layers.0.mlp.down_proj.weight");
  ASSERT_EQ(wa.shape, (std::vector<int64_t>{256, 512}));
  EXPECT_EQ(std::memcmp(wa.data, b.get("model.layers.0.mlp.down_proj.weight").data, wa.num_bytes()), 0);
  EXPECT_NE(std::memcmp(wa.data, c.get("model.layers.0.mlp.down_proj.weight").data, wa.num_bytes()), 0);
  double sum = 0, sq = 0;
  const auto* p = static_cast<const uint16_t*>(wa.data);
  for (int64_t i = 0; i < wa.num_elements(); ++i) {
    sum += bf16_to_f32(p[i]);
    sq += bf16_to_f32(p[i]) * bf16_to_f32(p[i]);
  }
  const double n = static_cast<double>(wa.num_elements());
  EXPECT_NEAR(sum / n, 0.0, 0.002);
  EXPECT_NEAR(std::sqrt(sq / n), 1.0 / std::sqrt(512.0), 0.002);  // std 1/sqrt(fan-in)
  const auto* norm = static_cast<const uint16_t*>(a.get("model.norm.weight").data);
  for (int i = 0; i < 256; ++i) {
    EXPECT_GE(bf16_to_f32(norm[i]), 0.89f);
    EXPECT_LE(bf16_to_f32(norm[i]), 1.11f);
  }
  EXPECT_NO_THROW(check_weights(m, a));
  EXPECT_THROW(check_weights(test::preset_module("tiny-qwen3"), a), Error);  // no q_norm weights
}

}  // namespace
}  // namespace mpk
