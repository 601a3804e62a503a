// What a model spec names, decided in one place for every tool and the studio: a preset
// ("tiny" or "preset:tiny"), a Hugging Face config (a config.json path, or a directory
// holding one, whose *.safetensors may hold the weights), or a module file (.mpk, text or
// binary: anything else that exists). The CLIs and the studio resolve specs here.
#pragma once

#include <string>

#include "ir/import/import.h"
#include "ir/module.h"

namespace mpk {

enum class ModelSourceKind { kPreset, kConfig, kModule };

struct ModelSource {
  ModelSourceKind kind = ModelSourceKind::kPreset;
  std::string path;            // the preset's name, the config.json path or the module path
  std::string checkpoint_dir;  // kConfig: the folder holding config.json; "" otherwise

  // The module provenance an import records: "preset:<name>" or the config.json path.
  std::string provenance() const { return kind == ModelSourceKind::kPreset ? "preset:" + path : path; }
};

// Resolves `spec`. A relative module path that is not found is also looked for under
// `relative_to` when given (a trace.db's folder, for the module a run names). Throws
// mpk::Error naming the spec and listing the presets when it names none of the three.
ModelSource resolve_model_source(const std::string& spec, const std::string& relative_to = "");

// A preset or config is imported with `o` and verified; a module file is loaded and
// verified (`o` does not apply to it).
Module load_model_source(const ModelSource& s, const ImportOptions& o);

// The checkpoint folder of the model a module was imported from (its provenance source),
// or "" for a preset or a source that no longer resolves to a config.
std::string checkpoint_dir_of(const Module& m);

}  // namespace mpk
