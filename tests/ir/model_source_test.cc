// Model specs resolved in one place (ir/import/model_source.h): presets with and without
// "preset:", a directory holding config.json, a config.json path, a module file (also next
// to a trace), and the refusals; the checkpoint folder a module's provenance names.
#include "ir/import/model_source.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "ir/error.h"
#include "ir/serialize.h"

namespace mpk {
namespace {

namespace fs = std::filesystem;

class ModelSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("mpk_model_source_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "ckpt");
    fs::create_directories(dir_ / "empty");
    fs::copy_file(fs::path(MPK_SOURCE_DIR) / "fuzz/corpus/config_json/tiny.json", dir_ / "ckpt/config.json");
    save_module(import_model("tiny", {}), (dir_ / "tiny.mpk").string(), Format::kText);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string at(const std::string& name) const { return (dir_ / name).string(); }

  static std::string refusal(const std::string& spec, const std::string& relative_to = "") {
    try {
      resolve_model_source(spec, relative_to);
    } catch (const Error& e) {
      return e.what();
    }
    return "accepted";
  }

  fs::path dir_;
};

TEST_F(ModelSourceTest, PresetsByNameOrWithThePrefix) {
  for (const std::string spec : {"tiny", "preset:tiny"}) {
    const ModelSource s = resolve_model_source(spec);
    EXPECT_EQ(s.kind, ModelSourceKind::kPreset) << spec;
    EXPECT_EQ(s.path, "tiny");
    EXPECT_EQ(s.provenance(), "preset:tiny");
    EXPECT_EQ(s.checkpoint_dir, "");
  }
}

TEST_F(ModelSourceTest, ADirectoryOrItsConfigJsonIsACheckpoint) {
  const ModelSource d = resolve_model_source(at("ckpt"));
  EXPECT_EQ(d.kind, ModelSourceKind::kConfig);
  EXPECT_EQ(d.path, at("ckpt/config.json"));
  EXPECT_EQ(d.checkpoint_dir, at("ckpt"));
  const ModelSource f = resolve_model_source(at("ckpt/config.json"));
  EXPECT_EQ(f.kind, ModelSourceKind::kConfig);
  EXPECT_EQ(f.checkpoint_dir, at("ckpt"));
  const Module m = load_model_source(d, {});
  EXPECT_EQ(m.provenance.source, at("ckpt/config.json"));
  EXPECT_EQ(checkpoint_dir_of(m), at("ckpt"));
}

TEST_F(ModelSourceTest, AModuleFileAsGivenOrNextToATrace) {
  const ModelSource s = resolve_model_source(at("tiny.mpk"));
  EXPECT_EQ(s.kind, ModelSourceKind::kModule);
  EXPECT_EQ(load_model_source(s, {}).provenance.source, "preset:tiny");
  const ModelSource next = resolve_model_source("tiny.mpk", dir_.string());
  EXPECT_EQ(next.kind, ModelSourceKind::kModule);
  EXPECT_EQ(next.path, at("tiny.mpk"));
  EXPECT_EQ(checkpoint_dir_of(load_model_source(next, {})), "");  // a preset has no checkpoint
}

TEST_F(ModelSourceTest, RefusalsNameTheSpec) {
  EXPECT_NE(refusal(at("missing")).find("'" + at("missing") + "' is neither a preset (tiny,"), std::string::npos)
      << refusal(at("missing"));
  EXPECT_NE(refusal(at("empty")).find("is a directory without a config.json"), std::string::npos);
  EXPECT_NE(refusal("").find("is neither a preset"), std::string::npos);
  EXPECT_NE(refusal("tiny.mpk").find("is neither a preset"), std::string::npos);  // not next to a trace
  try {
    import_model(at("tiny.mpk"), {});
    FAIL() << "import took a module file";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is a module file"), std::string::npos) << e.what();
  }
}

TEST_F(ModelSourceTest, AMovedCheckpointLeavesNoFolder) {
  Module m = load_model_source(resolve_model_source(at("ckpt")), {});
  fs::remove_all(dir_ / "ckpt");
  EXPECT_EQ(checkpoint_dir_of(m), "");
}

}  // namespace
}  // namespace mpk
