// Hostile checkpoints given to `mpk run`: safetensors files whose data_offsets alias,
// overlap, leave gaps or trailing bytes (the format forbids all four; each would feed one
// tensor's bytes to another or hide data), and model.safetensors.index.json files that are
// endless, nested or name files that are not safetensors.
#include <filesystem>

#include "runtime/weights/safetensors.h"
#include "tests/hostile/checkpoint_files.h"
#include "tests/hostile/hostile_fixture.h"

namespace mpk::hostile {
namespace {

class SafetensorsHostileTest : public HostileTest {
 protected:
  void SetUp() override {
    HostileTest::SetUp();
    write_tiny_checkpoint(dir());
    image_ = SafetensorsImage::read(file());
  }
  std::string dir() const { return path("ckpt"); }
  std::string file() const { return dir() + "/model.safetensors"; }
  CliResult run_checkpoint() { return run("mpk", "run --backend cpu --model '" + dir() + "' --steps 1"); }

  SafetensorsImage image_;
};

// lm_head.weight's entry points at the bytes of model.embed_tokens.weight (same shape):
// the file is rewritten without lm_head's own bytes, so nothing but the alias is wrong.
TEST_F(SafetensorsHostileTest, AliasedTensorsAreRefused) {
  const Module m = import_model("tiny", ImportOptions{});
  const Weights w = random_weights(m, 1);
  std::vector<SafetensorsTensorOut> rest;
  for (const auto& [name, t] : w.tensors())
    if (name != "lm_head.weight") rest.push_back({name, t.dtype, t.shape, t.data});
  write_safetensors(file(), rest);
  SafetensorsImage img = SafetensorsImage::read(file());
  img.header["lm_head.weight"] = img.header["model.embed_tokens.weight"];
  img.write(file());
  expect_refused(run_checkpoint(), "overlaps tensor");
}

TEST_F(SafetensorsHostileTest, OverlappingTensorsAreRefused) {
  // Every tensor after the first in the data moves 2 bytes back into its predecessor.
  for (auto& [name, e] : image_.header.items()) {
    if (name == "__metadata__" || e["data_offsets"][0] == 0) continue;
    e["data_offsets"] = {e["data_offsets"][0].get<uint64_t>() - 2, e["data_offsets"][1].get<uint64_t>() - 2};
  }
  image_.write(file());
  expect_refused(run_checkpoint(), "overlaps tensor");
}

TEST_F(SafetensorsHostileTest, GapBetweenTensorsIsRefused) {
  // The tensor at the end of the data moves 8 bytes on; the file grows by 8 bytes.
  for (auto& [name, e] : image_.header.items()) {
    if (name == "__metadata__" || e["data_offsets"][1] != image_.data.size()) continue;
    e["data_offsets"] = {e["data_offsets"][0].get<uint64_t>() + 8, e["data_offsets"][1].get<uint64_t>() + 8};
    image_.data.insert(e["data_offsets"][0].get<size_t>() - 8, 8, '\0');
  }
  image_.write(file());
  expect_refused(run_checkpoint(), "leaves 8 bytes unused before it");
}

TEST_F(SafetensorsHostileTest, TrailingBytesAreRefused) {
  image_.data += std::string(16, 'x');
  image_.write(file());
  expect_refused(run_checkpoint(), "16 trailing bytes after the last tensor");
}

TEST_F(SafetensorsHostileTest, OversizedIndexIsRefusedAtTheSizeLimit) {
  write("ckpt/model.safetensors.index.json", "{\"weight_map\": {}}" + std::string(65 << 20, ' '));
  expect_refused(run_checkpoint(), "is larger than 64 MiB");
}

TEST_F(SafetensorsHostileTest, DeeplyNestedIndexIsRefused) {
  write("ckpt/model.safetensors.index.json",
        "{\"weight_map\": {}, \"metadata\": " + std::string(100000, '[') + std::string(100000, ']') + "}");
  expect_refused(run_checkpoint(), "nested deeper than 4 levels");
}

TEST_F(SafetensorsHostileTest, IndexNamingANonSafetensorsFileIsRefused) {
  write("ckpt/model.safetensors.index.json", R"({"weight_map": {"model.norm.weight": "config.json"}})");
  expect_refused(run_checkpoint(), "names 'config.json', not a .safetensors file");
}

}  // namespace
}  // namespace mpk::hostile
