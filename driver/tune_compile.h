// Compiles the candidates of `mpk tune` (docs/tune.md) from one imported model, sharing the
// work they have in common: the module after the program passes (the fusions) and after
// the graph passes (decompose, infer-deps) is kept for the last few distinct prefixes, so
// a candidate that differs only in assign-sm options costs one assign-sm run.
#pragma once

#include <cstdint>
#include <deque>
#include <string>

#include "ir/module.h"
#include "passes/pipeline.h"

namespace mpk {

class TuneCompiler {
 public:
  explicit TuneCompiler(Module imported);

  // The scheduled module of `pipeline`, checked by its passes (assign-sm proves the
  // schedule deadlock-free) but not by the verifier. Throws mpk::Error naming the pass, or
  // when decompose makes more tasks than the limit.
  Module schedule(const Pipeline& pipeline);
  // Candidates whose decompose makes more tasks are refused before the passes after it
  // run (0: no limit).
  void set_task_limit(int64_t tasks) { task_limit_ = tasks; }
  // The tasks the pipeline's passes up to its first decompose make (none after it runs).
  int64_t decomposed_tasks(const Pipeline& pipeline);
  // The module of `pipeline` compiled from the import and verified, as `mpk run` would
  // compile it (driver/compile.h run_pipeline).
  Module verified(const Pipeline& pipeline) const;
  const Module& imported() const { return imported_; }

 private:
  struct Cached {
    std::string key;
    Module module;
  };
  // The module after p[0, to), run from `from` (the module after p[0, begin)), cached by
  // the text of p[0, to); the `keep` most recent are kept.
  const Module& stage(std::deque<Cached>& cache, const Module& from, const Pipeline& p, size_t begin,
                      size_t to, size_t keep);

  Module imported_;
  std::deque<Cached> program_, graph_;
  int64_t task_limit_ = 0;
};

}  // namespace mpk
