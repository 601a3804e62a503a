// One model's megakernels on the GPU behind one face: the module's megakernel on one GPU,
// or one per tensor-parallel rank when its weights come in ranks (a sharded module,
// runtime/gpu/tp_megakernel.h). mpk run's gpu executor and mpk bench decode through it.
// Built only with MPK_WITH_CUDA.
#pragma once

#include <memory>
#include <string>

#include "driver/weights.h"
#include "ir/error.h"
#include "runtime/gpu/megakernel_runtime.h"
#include "runtime/gpu/tp_megakernel.h"

namespace mpk {

class GpuDecoder {
 public:
  GpuDecoder(const Module& m, const RunWeights& w, const GpuOptions& o) {
    if (w.ranks.size() > 1)
      tp_ = std::make_unique<GpuTpMegakernel>(m, w.ranks, o);
    else
      one_ = std::make_unique<GpuMegakernel>(m, w.weights, o);
  }

  // Tensor-parallel ranks: 1 on one GPU.
  int ranks() const { return tp_ ? tp_->ranks() : 1; }
  // The megakernel of rank 0, the only one on one GPU.
  const GpuMegakernel& rank0() const { return tp_ ? tp_->rank(0) : *one_; }
  // The GPUs, for a person: "NVIDIA H100 80GB HBM3", or "4 x ..." over tensor-parallel ranks.
  std::string gpus() const { return (tp_ ? std::to_string(tp_->ranks()) + " x " : "") + rank0().info().name; }
  // One launch of every rank's megakernel.
  GpuRunResult run(const GpuRunOptions& o) { return tp_ ? tp_->run(o) : one_->run(o); }
  // The one GPU's megakernel, for what runs on one GPU only (`what`: a prefill, the
  // per-op baseline); throws for a sharded module.
  GpuMegakernel& single(const std::string& what) {
    if (tp_) throw Error(what + " runs on one GPU; this module is sharded over tensor-parallel ranks");
    return *one_;
  }

 private:
  std::unique_ptr<GpuMegakernel> one_;
  std::unique_ptr<GpuTpMegakernel> tp_;
};

}  // namespace mpk
