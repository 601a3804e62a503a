// Tensor-parallel decode on several GPUs (docs/ir.md "Tensor parallel", docs/megakernel.md):
// a module sharded by shard-tp for N ranks runs as N persistent megakernels, one per GPU
// of a TpGroup (one process, one host thread per GPU), each with its rank's weights. The
// event counters and the partial products that all_reduce reads live in each rank's
// symmetric arena, so a rank's kernel waits on its peers' counters and reads their
// partials over NVLink; every launch starts once every rank has reset its counters.
#pragma once

#include <memory>
#include <vector>

#include "runtime/gpu/megakernel_runtime.h"

namespace mpk {

class TpGroup;

class GpuTpMegakernel {
 public:
  // Rank r on GPU r with rank_weights[r] (shard_weights). Throws mpk::Error as
  // GpuMegakernel and TpGroup do, prefixed "rank r: " where one rank failed.
  GpuTpMegakernel(const Module& sharded, const std::vector<Weights>& rank_weights, const GpuOptions& options = {});
  ~GpuTpMegakernel();
  GpuTpMegakernel(const GpuTpMegakernel&) = delete;
  GpuTpMegakernel& operator=(const GpuTpMegakernel&) = delete;

  // Every rank's kernel at once. Returns rank 0's result with kernel_ms the slowest
  // rank's, and, where the LM head is split by vocabulary, every rank's logits gathered;
  // throws mpk::Error when a rank computed other tokens than rank 0. Streaming and
  // stopping (on_step, stop_ids) are rank 0's; with o.trace every rank records its trace
  // (rank 0's in trace, the others' in peer_traces, each on its GPU's clock).
  GpuRunResult run(const GpuRunOptions& o);

  int ranks() const;
  const GpuMegakernel& rank(int r) const;

 private:
  std::unique_ptr<TpGroup> group_;
  std::vector<std::unique_ptr<GpuMegakernel>> ranks_;
};

}  // namespace mpk
