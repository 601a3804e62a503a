// Tensor-parallel decode on several GPUs; see tp_megakernel.h.
#include "runtime/gpu/tp_megakernel.h"

#include <algorithm>
#include <condition_variable>
#include <mutex>

#include "ir/ops/tensor_parallel.h"
#include "runtime/cpu/run_common.h"
#include "runtime/gpu/tp_group.h"

namespace mpk {
namespace {

// The ranks meet here before they launch; a rank that failed before it arrived releases
// the others with an error instead of leaving them waiting.
class LaunchBarrier {
 public:
  explicit LaunchBarrier(int n) : left_(n) {}
  void arrive_and_wait() {
    std::unique_lock<std::mutex> lock(mu_);
    if (--left_ == 0) cv_.notify_all();
    cv_.wait(lock, [&] { return left_ <= 0 || failed_; });
    if (left_ > 0) throw Error("another rank failed before its launch");
  }
  void fail() {
    std::lock_guard<std::mutex> lock(mu_);
    failed_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int left_;
  bool failed_ = false;
};

}  // namespace

GpuTpMegakernel::GpuTpMegakernel(const Module& sharded, const std::vector<Weights>& rank_weights,
                                 const GpuOptions& options) {
  const int n = static_cast<int>(tp_ranks(sharded));
  if (static_cast<int>(rank_weights.size()) != n)
    throw Error("the module is sharded for " + std::to_string(n) + " tensor-parallel ranks, but " +
                std::to_string(rank_weights.size()) + " ranks' weights were given");
  group_ = std::make_unique<TpGroup>(n, tp_arena_layout(sharded).bytes);
  ranks_.resize(n);
  auto build = [&](int r) {
    GpuOptions o = options;
    o.rank.device = r;
    o.rank.rank = r;
    o.rank.ranks = n;
    o.rank.arena = group_->arena(r);
    const std::vector<uint64_t>& bases = group_->peer_bases(r);
    o.rank.peer_delta.clear();
    for (uint64_t b : bases) o.rank.peer_delta.push_back(static_cast<int64_t>(b - bases[r]));
    if (r > 0) o.compile.progress = false;
    ranks_[r] = std::make_unique<GpuMegakernel>(sharded, rank_weights[r], o);
  };
  // Rank 0 compiles the kernel (or finds it in the cache); the others load it from there.
  run_on_ranks(1, build);
  run_on_ranks(n, [&](int r) {
    if (r > 0) build(r);
  });
}

GpuTpMegakernel::~GpuTpMegakernel() {
  // Each rank frees its buffers on its own device, before the group frees the arenas.
  try {
    run_on_ranks(static_cast<int>(ranks_.size()), [&](int r) { ranks_[r].reset(); });
  } catch (...) {
  }
}

int GpuTpMegakernel::ranks() const { return static_cast<int>(ranks_.size()); }
const GpuMegakernel& GpuTpMegakernel::rank(int r) const { return *ranks_.at(r); }

GpuRunResult GpuTpMegakernel::run(const GpuRunOptions& o) {
  const int n = ranks();
  std::vector<GpuRunResult> results(n);
  LaunchBarrier reset(n);
  run_on_ranks(n, [&](int r) {
    GpuRunOptions mine = o;  // every rank stops at the same step: it computes the same tokens
    if (r > 0) mine.on_step = nullptr;
    mine.before_launch = [&] { reset.arrive_and_wait(); };
    try {
      results[r] = ranks_[r]->run(mine);
    } catch (...) {
      reset.fail();
      throw;
    }
  });
  check_ranks_agree(results);
  for (int r = 1; r < n; ++r) {
    results[0].kernel_ms = std::max(results[0].kernel_ms, results[r].kernel_ms);
    results[0].trace_overflow += results[r].trace_overflow;
    results[0].peer_traces.push_back(std::move(results[r].trace));
  }
  const Module& m = ranks_[0]->module();
  if (vocab_split(m)) {  // each rank wrote its slice of the logits
    std::vector<std::vector<float>> last, history;
    for (GpuRunResult& r : results) {
      last.push_back(std::move(r.logits));
      history.push_back(std::move(r.logits_history));
    }
    results[0].logits = gather_vocab_slices(last, results[0].batch);
    results[0].logits_history = gather_vocab_slices(history, results[0].steps * results[0].batch);
  }
  return std::move(results[0]);
}

}  // namespace mpk
