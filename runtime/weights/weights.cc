// Weights: the container, checkpoint loading (safetensors, single or sharded) and
// checking against a Program.
#include "runtime/weights/weights.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "ir/checked.h"
#include "ir/error.h"
#include "ir/file_io.h"
#include "ir/json_brief.h"
#include "ir/region.h"
#include "runtime/cpu/memory_budget.h"
#include "runtime/weights/safetensors.h"

namespace mpk {
namespace fs = std::filesystem;

int64_t WeightTensor::num_elements() const { return checked_product(shape, "weight element count"); }

const WeightTensor* Weights::find(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

const WeightTensor& Weights::get(const std::string& name) const {
  if (const WeightTensor* t = find(name)) return *t;
  throw Error("weights " + source_ + ": no tensor '" + name + "'");
}

int64_t Weights::total_bytes() const {
  int64_t n = 0;
  for (const auto& [name, t] : tensors_) n = checked_add(n, t.num_bytes(), "weights: the total bytes");
  return n;
}

void Weights::add(const std::string& name, WeightTensor t, std::shared_ptr<const void> owner,
                  bool on_heap) {
  if (on_heap) heap_bytes_ = checked_add(heap_bytes_, t.num_bytes(), "weights: the heap bytes");
  tensors_[name] = std::move(t);
  if (owner) owners_.push_back(std::move(owner));
}

namespace {

bool is_float_weight_dtype(DType d) {
  return d == DType::kBF16 || d == DType::kF16 || d == DType::kF32;
}

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

// Where each tensor of a checkpoint directory lives: name -> file path.
struct CheckpointIndex {
  std::string describe;                    // for "missing tensor" messages
  std::map<std::string, std::string> file_of;
};

// model.safetensors.index.json: {"metadata": {...}, "weight_map": {"tensor": "file", ...}}.
// A real index is at most a few MiB (one line per tensor) and two levels deep.
constexpr int64_t kMaxIndexBytes = int64_t{64} << 20;
constexpr int kMaxIndexDepth = 4;

CheckpointIndex read_index_json(const fs::path& dir, const fs::path& index_path) {
  const std::string src = index_path.string();
  const std::string text = read_file_bounded(src, kMaxIndexBytes, "checkpoint index");
  nlohmann::json j;
  try {
    auto depth_guard = [&](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
      if (depth > kMaxIndexDepth)
        throw Error(src + ": malformed index: JSON nested deeper than " + std::to_string(kMaxIndexDepth) + " levels");
      return true;
    };
    j = nlohmann::json::parse(text, depth_guard);
  } catch (const nlohmann::json::exception& e) {
    throw Error(src + ": malformed JSON: " + text_brief(e.what(), kMaxParserMessage));
  }
  if (!j.is_object() || !j.contains("weight_map") || !j.at("weight_map").is_object())
    throw Error(src + ": no \"weight_map\" object");
  CheckpointIndex idx;
  idx.describe = src;
  for (const auto& [name, file] : j.at("weight_map").items()) {
    const std::string entry = src + ": weight_map entry '" + text_brief(name) + "'";
    if (!file.is_string()) throw Error(entry + " is not a string");
    const std::string f = file.get<std::string>();
    const fs::path rel(f);
    if (f.empty() || rel.is_absolute() || rel.filename() != rel || f == "." || f == "..")
      throw Error(entry + " names a file outside the directory: " + text_brief(f));
    if (rel.extension() != ".safetensors")
      throw Error(entry + " names '" + text_brief(f) + "', not a .safetensors file");
    idx.file_of[name] = (dir / rel).string();
  }
  return idx;
}

}  // namespace

void check_weights(const Module& m, const Weights& w) {
  for (const Tensor& t : m.program.tensors) {
    if (t.role != TensorRole::kWeight) continue;
    const WeightTensor* wt = w.find(t.name);
    if (!wt) throw Error("weights " + w.source() + ": missing tensor '" + t.name + "'");
    const std::string where = (wt->file.empty() ? "weights " + w.source() : wt->file) +
                              ": tensor '" + t.name + "'";
    if (!is_float_weight_dtype(wt->dtype))
      throw Error(where + " has dtype " + std::string(name_of(wt->dtype)) +
                  "; weights must be bf16, f16 or f32");
    if (wt->shape != t.shape)
      throw Error(where + " has shape " + format_shape(wt->shape) + " but the config implies " +
                  format_shape(t.shape));
    if (!wt->data && wt->num_bytes() > 0) throw Error(where + " has no data");
  }
}

Weights load_weights(const Module& m, const std::string& path) {
  fs::path dir(path);
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) dir = dir.has_parent_path() ? dir.parent_path() : fs::path(".");
  if (!fs::is_directory(dir, ec)) throw Error(path + ": no such checkpoint directory");

  CheckpointIndex idx;
  std::map<std::string, std::shared_ptr<const SafetensorsFile>> open_files;
  auto open_file = [&](const std::string& f) {
    auto it = open_files.find(f);
    if (it != open_files.end()) return it->second;
    if (!is_file(f)) throw Error(f + ": missing safetensors file (named by " + idx.describe + ")");
    return open_files[f] = SafetensorsFile::open(f);
  };

  const fs::path index_path = dir / "model.safetensors.index.json";
  if (is_file(index_path)) {
    idx = read_index_json(dir, index_path);
  } else {
    std::vector<std::string> files;
    if (is_file(dir / "model.safetensors")) {
      files.push_back((dir / "model.safetensors").string());
    } else {
      for (const fs::directory_entry& e : fs::directory_iterator(dir, ec))
        if (e.path().extension() == ".safetensors" && is_file(e.path())) files.push_back(e.path().string());
      std::sort(files.begin(), files.end());
    }
    if (files.empty()) throw Error(dir.string() + ": no *.safetensors files in the checkpoint directory");
    for (const std::string& f : files) {
      idx.describe += (idx.describe.empty() ? "" : ", ") + f;
      for (const auto& [name, entry] : open_file(f)->header().tensors) {
        auto [it, fresh] = idx.file_of.emplace(name, f);
        if (!fresh) throw Error(f + ": tensor '" + name + "' is also in " + it->second);
      }
    }
  }

  Weights w;
  w.set_source(dir.string());
  for (const Tensor& t : m.program.tensors) {
    if (t.role != TensorRole::kWeight) continue;
    auto where = idx.file_of.find(t.name);
    if (where == idx.file_of.end())
      throw Error(idx.describe + ": missing tensor '" + t.name + "'");
    std::shared_ptr<const SafetensorsFile> file = open_file(where->second);
    auto e = file->header().tensors.find(t.name);
    if (e == file->header().tensors.end())
      throw Error(where->second + ": missing tensor '" + t.name + "' (the index places it here)");
    const SafetensorsEntry& entry = e->second;
    const std::string what = where->second + ": tensor '" + t.name + "'";
    if (!entry.mpk_dtype || !is_float_weight_dtype(*entry.mpk_dtype))
      throw Error(what + " has dtype " + entry.dtype + "; weights must be BF16, F16 or F32");
    if (entry.shape != t.shape)
      throw Error(what + " has shape " + format_shape(entry.shape) + " but the config implies " +
                  format_shape(t.shape));
    WeightTensor wt{*entry.mpk_dtype, entry.shape, file->data(entry), where->second};
    std::shared_ptr<const void> owner = file;
    bool on_heap = false;
    const auto align = static_cast<uintptr_t>(size_of(wt.dtype));
    if (reinterpret_cast<uintptr_t>(wt.data) % align != 0) {
      // A header whose length is not a multiple of the element size: copy this tensor
      // into an aligned buffer rather than read misaligned elements.
      check_host_memory(checked_add(w.heap_bytes(), static_cast<int64_t>(entry.size), what),
                        "an aligned copy of " + what);
      std::shared_ptr<uint8_t[]> copy(new uint8_t[entry.size]);
      std::memcpy(copy.get(), wt.data, entry.size);
      wt.data = copy.get();
      owner = std::shared_ptr<const void>(copy, copy.get());
      on_heap = true;
    }
    w.add(t.name, std::move(wt), std::move(owner), on_heap);
  }
  return w;
}

}  // namespace mpk
