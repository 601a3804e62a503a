// Model specs resolved once (ir/import/model_source.h).
#include "ir/import/model_source.h"

#include <filesystem>

#include "ir/error.h"
#include "ir/serialize.h"
#include "ir/verifier.h"

namespace mpk {
namespace {

namespace fs = std::filesystem;

bool is_regular(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

std::string folder_of(const fs::path& file) {
  return file.has_parent_path() ? file.parent_path().string() : ".";
}

}  // namespace

ModelSource resolve_model_source(const std::string& spec, const std::string& relative_to) {
  const std::string name = spec.rfind("preset:", 0) == 0 ? spec.substr(7) : spec;
  if (find_preset(name)) return {ModelSourceKind::kPreset, name, ""};
  std::error_code ec;
  const fs::path p(spec);
  if (!spec.empty() && fs::is_directory(p, ec)) {
    if (!is_regular(p / "config.json"))
      throw Error("model '" + spec + "' is a directory without a config.json");
    return {ModelSourceKind::kConfig, (p / "config.json").string(), p.string()};
  }
  if (p.extension() == ".json" && is_regular(p)) return {ModelSourceKind::kConfig, spec, folder_of(p)};
  // Anything else that exists is read as a module: load_module refuses what is not one
  // (a device, a fifo, an endless file) by name.
  if (!spec.empty() && p.extension() != ".json" && fs::exists(p, ec)) return {ModelSourceKind::kModule, spec, ""};
  if (!relative_to.empty() && p.is_relative() && p.extension() != ".json" && is_regular(fs::path(relative_to) / p))
    return {ModelSourceKind::kModule, (fs::path(relative_to) / p).string(), ""};
  std::string presets;
  for (const std::string& n : preset_names()) presets += (presets.empty() ? "" : ", ") + n;
  throw Error("model '" + spec + "' is neither a preset (" + presets +
              "), a config.json or a directory holding one, nor a module file");
}

Module load_model_source(const ModelSource& s, const ImportOptions& o) {
  if (s.kind == ModelSourceKind::kModule) return load_module(s.path);
  Module m = s.kind == ModelSourceKind::kPreset ? build_module(*find_preset(s.path), o, s.provenance())
                                                : build_module(load_model_config(s.path), o, s.provenance());
  verify_or_throw(m);
  return m;
}

std::string checkpoint_dir_of(const Module& m) {
  try {
    const ModelSource s = resolve_model_source(m.provenance.source);
    return s.kind == ModelSourceKind::kConfig ? s.checkpoint_dir : "";
  } catch (const Error&) {
    return "";
  }
}

}  // namespace mpk
