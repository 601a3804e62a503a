// The cpu executor: the scheduled task graph on the CPU executor (runtime/cpu/executor.h),
// in schedule order on a pool of threads or in a seeded random order.
#include <functional>
#include <optional>

#include "driver/compile.h"
#include "driver/executor.h"
#include "driver/weights.h"
#include "ir/error.h"
#include "runtime/cpu/executor.h"

namespace mpk {
namespace {

class CpuExecutor : public Executor {
 public:
  CpuExecutor(const Module& m, const ExecutorOptions& o) : module_(m), options_(o) {
    const std::optional<CpuOrder> order = parse_cpu_order(o.order);
    if (!order) throw Error("option '--order' expects 'schedule' or 'random', got '" + o.order + "'");
    order_ = *order;
    weights_ = load_run_weights(m, o.weights_seed);
  }

  const char* kind() const override { return "cpu"; }
  const std::string& weights_note() const override { return weights_.note; }
  double weights_seconds() const override { return weights_.seconds; }

  std::string describe() const override {
    if (order_ == CpuOrder::kRandom)
      return "random order (seed " + std::to_string(options_.seed) + "), 1 thread";
    const std::string ranks = weights_.ranks.size() > 1 ? std::to_string(weights_.ranks.size()) + " ranks of " : "";
    return "schedule order, " + ranks + std::to_string(threads_) + " threads";
  }

  ExecResult run(const ExecRequest& req) override {
    if (req.record && order_ == CpuOrder::kRandom)
      throw Error("--trace records schedule-order runs; random order has no workers");
    check_steps_fit(module_, req.steps);
    CpuRunOptions o;
    o.steps = req.steps;
    o.prompt = req.prompt;
    o.prompt_rows = req.prompt_rows;
    o.order = order_;
    o.seed = options_.seed;
    o.threads = options_.threads;
    o.watchdog_s = options_.watchdog_s;
    o.record_tasks = req.record;
    StepFeed feed(req.on_step, req.stop);
    if (req.on_step || !req.stop.tokens.empty()) o.on_step = std::ref(feed);
    std::shared_ptr<ExecResult> prefill;
    CpuExecResult r;
    if (req.prefill) {
      if (weights_.ranks.size() > 1) throw Error("a prefill runs on one tensor-parallel rank");
      CpuPrefillResult pr = run_cpu_prefilled(*req.prefill, module_, weights_.weights, o);
      if (pr.prefill.steps > 0) prefill = std::make_shared<ExecResult>(result_of(std::move(pr.prefill), -1));
      r = std::move(pr.decode);
    } else {
      r = weights_.ranks.size() > 1 ? run_cpu_tp(module_, weights_.ranks, o) : run_cpu(module_, weights_.weights, o);
    }
    ExecResult out = result_of(std::move(r), feed.stopped_at());
    out.prefill = std::move(prefill);
    return out;
  }

  RunInfo run_info(const ExecResult& r) const override {
    RunInfo info;
    info.kind = "cpu";
    info.options = "order=schedule threads=" + std::to_string(r.threads) + " weights=" + weights_.note;
    info.batch = r.batch;
    info.steps = r.steps;
    info.device.name = "host CPU (" + std::to_string(r.threads) + " threads)";
    info.device.sm_count = static_cast<int32_t>(module_.graph.schedule.workers.size());
    return info;
  }

 private:
  ExecResult result_of(CpuExecResult r, int64_t stopped_at) {
    threads_ = r.threads;
    ExecResult out;
    out.steps = r.steps;
    out.batch = r.batch;
    out.tokens = std::move(r.tokens);
    out.top_logits = std::move(r.top_logits);
    out.step_seconds = std::move(r.step_seconds);
    out.seconds = r.total_seconds;
    out.logits = std::move(r.logits);
    out.threads = r.threads;
    out.stopped_at = stopped_at;
    out.streamed = true;
    out.first_step = r.first_step;
    out.executions.reserve(r.task_records.size());
    for (const CpuTaskRecord& t : r.task_records)
      out.executions.push_back({t.task, static_cast<int32_t>(t.step), t.worker, t.thread, t.wait_ns,
                                t.start_ns, t.end_ns, t.rank});
    return out;
  }

  const Module& module_;
  ExecutorOptions options_;
  CpuOrder order_ = CpuOrder::kSchedule;
  RunWeights weights_;
  int64_t threads_ = 0;
};

}  // namespace

std::unique_ptr<Executor> make_cpu_executor(const Module& module, const ExecutorOptions& options) {
  return std::make_unique<CpuExecutor>(module, options);
}

}  // namespace mpk
