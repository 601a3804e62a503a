// load_run_weights: a checkpoint next to the module's config.json, else random weights.
#include "driver/weights.h"

#include <filesystem>

#include "driver/compile.h"
#include "ir/import/model_source.h"
#include "ir/ops/tensor_parallel.h"

namespace mpk {
namespace {

namespace fs = std::filesystem;

bool has_safetensors(const std::string& dir) {
  std::error_code ec;
  if (dir.empty() || !fs::is_directory(dir, ec)) return false;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".safetensors" ||
        e.path().filename() == "model.safetensors.index.json")
      return true;
  return false;
}

}  // namespace

RunWeights load_run_weights(const Module& m, uint64_t seed) {
  RunWeights out;
  const auto t0 = std::chrono::steady_clock::now();
  const std::string dir = checkpoint_dir_of(m);
  const bool sharded = m.attrs.count("tp") > 0;
  const Module whole = sharded ? with_whole_weights(m) : Module{};
  const Module& model = sharded ? whole : m;
  if (has_safetensors(dir)) {
    out.weights = load_weights(model, dir);
    out.note = "checkpoint " + dir;
  } else {
    out.weights = random_weights(model, seed);
    out.note = out.weights.source() + (dir.empty() ? "" : " (no *.safetensors in " + dir + ")");
  }
  if (sharded) {
    for (int64_t r = 0; r < tp_ranks(m); ++r) out.ranks.push_back(shard_weights(m, out.weights, r));
    out.note += ", sharded over " + std::to_string(tp_ranks(m)) + " tensor-parallel ranks";
  }
  out.seconds = seconds_since(t0);
  return out;
}

}  // namespace mpk
