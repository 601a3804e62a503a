// The CPU executor: schedule order on a pool of threads running logical workers, and
// seeded random order; tensor parallel as one engine per rank; see executor.h.
#include "runtime/cpu/executor.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <exception>
#include <limits>
#include <mutex>
#include <random>
#include <thread>

#include "ir/error.h"
#include "ir/ops/tensor_parallel.h"
#include "ir/row_positions.h"
#include "ir/task_graph_index.h"
#include "runtime/cpu/race_check.h"
#include "runtime/cpu/task_kernels.h"

namespace mpk {
namespace {

using Clock = std::chrono::steady_clock;

std::string seconds_str(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

class Engine;

// The engines of a tensor-parallel run, by rank, and their stores (StepContext::rank_stores).
struct RankGroup {
  Clock::time_point start;  // the ranks' common time 0, for their task records
  std::vector<Engine*> engines;
  std::vector<const TensorStore*> stores;
};

// Where a run starts (run_cpu_prefilled): a prefill chunk's rows and end (docs/ir.md
// "Prefill chunks"), or a decode run's first step, with the KV caches a prefill filled.
// The engine counts its own steps from 0 (events, workers, the race check); its tasks
// see step first_step + k.
struct RunStart {
  bool prefill = false;  // a prefill chunk: no argmax
  int64_t first_step = 0;
  int64_t chunk = 1;
  int64_t end = std::numeric_limits<int64_t>::max();
  const Module* caches_module = nullptr;  // the caches' program, and their values
  const TensorStore* caches = nullptr;
};

class Engine {
 public:
  // `group`: this is rank `rank` of a tensor-parallel run (run_cpu_tp).
  Engine(const Module& m, const Weights& w, const CpuRunOptions& o, RankGroup* group = nullptr, int rank = 0,
         const RunStart& at = {})
      : m_(m), o_(o), at_(at), rt_(checked_run_tensors(m, o, at)), store_(m.program, w), rec_(o.steps, rt_.batch),
        graph_(m.graph), counters_(m.graph.events.size()), done_(m.graph.tasks.size()),
        limit_(o.steps - at.first_step), delivered_(at.first_step), group_(group), rank_(rank) {
    for (auto& c : counters_) c.store(0);
    for (auto& d : done_) d.store(0);
    resolve_graph();
    if (o.check_races) races_.emplace(m);
    if (at.caches) copy_caches();
  }

  CpuExecResult run() {
    start_ = group_ ? group_->start : Clock::now();
    last_progress_ns_ = 0;
    if (o_.order == CpuOrder::kRandom) {
      run_random();
    } else {
      run_schedule();
    }
    CpuExecResult r;
    static_cast<CpuRunResult&>(r) = collect_result(rec_, store_, rt_, start_, at_.first_step + limit_.load());
    r.tasks_run = tasks_run_.load();
    r.threads = threads_used_;
    for (auto& recs : records_) r.task_records.insert(r.task_records.end(), recs.begin(), recs.end());
    return r;
  }

 private:
  static RunTensors checked_run_tensors(const Module& m, const CpuRunOptions& o, const RunStart& at) {
    if (m.graph.tasks.empty())
      throw Error("the module has no tasks: run the decompose, infer-deps and assign-sm passes first");
    RunTensors rt = find_run_tensors(m.program, !at.prefill);
    rt.batch /= at.chunk;  // a prefill chunk's sequences
    check_run_inputs(rt, at.prefill ? at.end : o.steps, o.prompt, o.prompt_rows);
    if (!(o.watchdog_s > 0)) throw Error("the watchdog timeout must be positive");
    return rt;
  }

  // The KV caches of the run before (by name) into this run's.
  void copy_caches() {
    const Program& from = at_.caches_module->program;
    for (TensorId t = 0; t < static_cast<TensorId>(m_.program.tensors.size()); ++t) {
      const Tensor& tt = m_.program.tensors[t];
      if (tt.role != TensorRole::kKvCache) continue;
      const TensorId f = from.find_tensor(tt.name);
      if (f < 0 || from.tensors[f].shape != tt.shape || from.tensors[f].dtype != tt.dtype)
        throw Error("the prefill chunk has no KV cache '" + tt.name + "' of the decode module's shape");
      const TensorBuffer& src = at_.caches->at(f);
      std::memcpy(store_.at(t).data, src.data, static_cast<size_t>(src.numel * size_of(tt.dtype)));
    }
  }

  void resolve_graph() {
    const TaskGraph& g = m_.graph;
    const auto n = static_cast<TaskId>(g.tasks.size());
    for (TaskId t = 0; t < n; ++t) {
      plans_.push_back(prepare_task(m_, t));
      for (const Region& r : g.tasks[t].writes) store_.require_writable(r.tensor, describe_task(m_, t));
    }
    graph_.require_valid();
    for (EventId e = 0; e < static_cast<EventId>(g.events.size()); ++e) {
      const Event& ev = g.events[e];
      const std::string name = "event " + std::to_string(e);
      if (ev.step_distance != 0 && ev.step_distance != 1)
        throw Error(name + ": step_distance must be 0 or 1, got " + std::to_string(ev.step_distance));
      if (ev.target != static_cast<int64_t>(ev.producers.size()))
        throw Error(name + ": target " + std::to_string(ev.target) + " differs from its " +
                    std::to_string(ev.producers.size()) + " producers");
    }
    if (o_.order == CpuOrder::kSchedule) {
      const Schedule& s = g.schedule;
      if (s.empty()) throw Error("the module has no schedule: run assign-sm first (or use random order)");
      std::vector<int> seen(n, 0);
      for (size_t w = 0; w < s.workers.size(); ++w)
        for (TaskId t : s.workers[w]) {
          if (t < 0 || t >= n)
            throw Error("schedule: worker " + std::to_string(w) + " lists task " + std::to_string(t) +
                        ", which does not exist");
          if (seen[t]++) throw Error("schedule: " + describe_task(m_, t) + " is scheduled twice");
        }
      for (TaskId t = 0; t < n; ++t)
        if (!seen[t]) throw Error("schedule: " + describe_task(m_, t) + " is not scheduled");
    }
  }

  int64_t need(EventId e, int64_t step) const {
    const Event& ev = m_.graph.events[e];
    return ev.target * (step + 1 - ev.step_distance);
  }

  // The engine whose counter of `e` is short at `step` (this one, or for an all_ranks event
  // the first rank's), or nullptr.
  const Engine* short_counter(EventId e, int64_t step) const {
    if (!m_.graph.events[e].all_ranks || !group_)
      return counters_[e].load(std::memory_order_acquire) < need(e, step) ? this : nullptr;
    for (const Engine* rank : group_->engines)
      if (rank->counters_[e].load(std::memory_order_acquire) < need(e, step)) return rank;
    return nullptr;
  }

  // The first event that keeps `t` from starting `step`, or -1.
  EventId blocking_event(TaskId t, int64_t step) const {
    for (EventId e : graph_.waits(t))
      if (short_counter(e, step)) return e;
    return -1;
  }

  std::string describe_wait(TaskId t, int64_t step) const {
    std::string s = describe_task(m_, t) + " at step " + std::to_string(step);
    const EventId e = blocking_event(t, step);
    if (e < 0) return s;
    const Engine* rank = short_counter(e, step);
    s += " waits on event " + std::to_string(e) + " (" +
         (group_ ? "rank " + std::to_string(rank->rank_) + "'s " : std::string()) + "counter " +
         std::to_string(rank->counters_[e].load()) + ", needs " + std::to_string(need(e, step)) + "; producers:";
    const std::span<const TaskId> prod = graph_.producers(e);
    for (size_t i = 0; i < prod.size() && i < 3; ++i) s += " " + describe_task(m_, prod[i]);
    if (prod.size() > 3) s += " and " + std::to_string(prod.size() - 3) + " more";
    return s + ")";
  }

  int64_t now_ns() const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start_).count();
  }

  void execute(TaskId t, int64_t step, int32_t worker, int32_t thread, int64_t wait_ns,
               std::vector<CpuTaskRecord>* recs) {
    if (races_) races_->check(m_, t, step, done_);
    const int64_t begin = o_.record_tasks ? now_ns() : 0;
    run_task(plans_[t], store_,
             StepContext{at_.first_step + step, &o_.prompt, &rec_, o_.prompt_rows,
                         group_ ? &group_->stores : nullptr, at_.chunk, at_.end});
    if (o_.on_step && rank_ == 0) deliver_steps();
    done_[t].fetch_add(1, std::memory_order_release);
    for (EventId e : graph_.triggers(t)) counters_[e].fetch_add(1, std::memory_order_release);
    tasks_run_.fetch_add(1, std::memory_order_relaxed);
    const int64_t end = now_ns();
    last_progress_ns_.store(end);
    if (recs && o_.record_tasks) recs->push_back({t, at_.first_step + step, worker, thread, wait_ns, begin, end, rank_});
    if (!group_) return wake();
    for (Engine* rank : group_->engines) rank->wake();  // their all_ranks waits read these counters
  }

  void wake() {
    epoch_.fetch_add(1);
    if (sleepers_.load() > 0) {
      std::lock_guard<std::mutex> lock(mu_);
      cv_.notify_all();
    }
  }



  // Hands every newly complete step to on_step, in order; a false answer lowers the limit
  // (of every rank) to the steps delivered, so no worker starts a later step.
  void deliver_steps() {
    std::lock_guard<std::mutex> lock(deliver_mu_);
    while (delivered_ < at_.first_step + limit_.load() && rec_.complete(delivered_)) {
      std::vector<int32_t> tokens(static_cast<size_t>(rt_.batch));
      for (int64_t b = 0; b < rt_.batch; ++b) tokens[b] = rec_.token(delivered_, b);
      const bool go_on = o_.on_step(delivered_, tokens);
      ++delivered_;
      if (go_on) continue;
      if (!group_) limit_.store(delivered_ - at_.first_step);
      else
        for (Engine* rank : group_->engines) rank->limit_.store(delivered_ - at_.first_step);
    }
  }

  struct WorkerState {
    const std::vector<TaskId>* list = nullptr;
    size_t pos = 0;
    int64_t step = 0;
    int64_t wait_since = -1;
  };

  void run_schedule() {
    const auto& lists = m_.graph.schedule.workers;
    std::vector<WorkerState> ws(lists.size());
    int64_t busy = 0;
    for (size_t w = 0; w < lists.size(); ++w) {
      ws[w].list = &lists[w];
      if (lists[w].empty()) ws[w].step = o_.steps;
      else ++busy;
    }
    int64_t threads = o_.threads > 0 ? o_.threads : std::max(1u, std::thread::hardware_concurrency());
    threads = std::max<int64_t>(1, std::min(threads, busy));
    threads_used_ = threads;
    // Busy workers are dealt round-robin over the threads.
    std::vector<std::vector<size_t>> owned(threads);
    int64_t next = 0;
    for (size_t w = 0; w < ws.size(); ++w)
      if (ws[w].step < limit_.load()) owned[next++ % threads].push_back(w);
    records_.resize(threads);
    std::exception_ptr error;
    std::mutex error_mu;
    auto body = [&](int64_t ti) {
      try {
        thread_loop(ws, owned[ti], static_cast<int32_t>(ti), &records_[ti]);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mu);
        if (!error) error = std::current_exception();
        stop();
      }
    };
    std::vector<std::thread> pool;
    for (int64_t i = 1; i < threads; ++i) pool.emplace_back(body, i);
    body(0);
    for (std::thread& t : pool) t.join();
    if (error) std::rethrow_exception(error);
  }

  void thread_loop(std::vector<WorkerState>& ws, const std::vector<size_t>& mine, int32_t thread,
                   std::vector<CpuTaskRecord>* recs) {
    // Saturated: a watchdog beyond int64 nanoseconds (292 years) never fires.
    const int64_t watchdog_ns = o_.watchdog_s < 9e9 ? static_cast<int64_t>(o_.watchdog_s * 1e9) : INT64_MAX;
    while (!abort_.load()) {
      const uint64_t seen = epoch_.load();
      bool all_done = true, progressed = false;
      for (size_t w : mine) {
        WorkerState& s = ws[w];
        while (s.step < limit_.load() && !abort_.load()) {
          const TaskId t = (*s.list)[s.pos];
          if (blocking_event(t, s.step) >= 0) {
            if (s.wait_since < 0) s.wait_since = now_ns();
            break;
          }
          const int64_t waited = s.wait_since >= 0 ? s.wait_since : now_ns();
          s.wait_since = -1;
          execute(t, s.step, static_cast<int32_t>(w), thread, waited, recs);
          progressed = true;
          if (++s.pos == s.list->size()) {
            s.pos = 0;
            ++s.step;
          }
        }
        if (s.step < limit_.load()) all_done = false;
      }
      if (all_done || abort_.load()) return;
      if (progressed) continue;
      if (now_ns() - last_progress_ns_.load() > watchdog_ns) {
        for (size_t w : mine) {
          const WorkerState& s = ws[w];
          if (s.step < limit_.load())
            throw Error("watchdog: no task finished for " + seconds_str(o_.watchdog_s) +
                        " s: worker " + std::to_string(w) + ": " + describe_wait((*s.list)[s.pos], s.step));
        }
      }
      std::unique_lock<std::mutex> lock(mu_);
      sleepers_.fetch_add(1);
      cv_.wait_for(lock, std::chrono::milliseconds(20),
                   [&] { return epoch_.load() != seen || abort_.load(); });
      sleepers_.fetch_sub(1);
    }
  }

  void run_random() {
    threads_used_ = 1;
    records_.resize(1);
    const auto n = static_cast<TaskId>(plans_.size());
    std::mt19937_64 rng(o_.seed);
    std::vector<int64_t> next_step(n, 0);
    std::vector<char> listed(n, 0);
    std::vector<TaskId> eligible;
    auto consider = [&](TaskId t) {
      if (!listed[t] && next_step[t] < limit_.load() && blocking_event(t, next_step[t]) < 0) {
        listed[t] = 1;
        eligible.push_back(t);
      }
    };
    for (TaskId t = 0; t < n; ++t) consider(t);
    for (;;) {
      if (eligible.empty()) {
        for (TaskId t = 0; t < n; ++t)
          if (next_step[t] < limit_.load())
            throw Error("the events deadlock: no task can run; " + describe_wait(t, next_step[t]));
        return;
      }
      const size_t i = static_cast<size_t>(rng() % eligible.size());
      const TaskId t = eligible[i];
      eligible[i] = eligible.back();
      eligible.pop_back();
      listed[t] = 0;
      if (next_step[t] >= limit_.load()) continue;  // on_step ended the run before this step
      const int64_t now = o_.record_tasks ? now_ns() : 0;
      execute(t, next_step[t]++, -1, 0, now, &records_[0]);
      consider(t);
      for (EventId e : graph_.triggers(t))
        for (TaskId c : graph_.consumers(e)) consider(c);
    }
  }

  const Module& m_;
  const CpuRunOptions& o_;
  const RunStart at_;
  RunTensors rt_;
  TensorStore store_;
  StepRecorder rec_;
  std::vector<TaskPlan> plans_;
  const TaskGraphIndex graph_;
  std::vector<std::atomic<int64_t>> counters_;
  std::vector<std::atomic<int64_t>> done_;
  std::optional<RaceChecker> races_;
  Clock::time_point start_;
  std::atomic<int64_t> last_progress_ns_{0};
  std::atomic<int64_t> tasks_run_{0};
  std::atomic<uint64_t> epoch_{0};
  std::atomic<int> sleepers_{0};
  std::atomic<bool> abort_{false};
  std::atomic<int64_t> limit_;  // steps to run: o_.steps - first_step until on_step ends the run early
  std::mutex deliver_mu_;
  int64_t delivered_;           // the next step to hand to on_step (under deliver_mu_)
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::vector<CpuTaskRecord>> records_;
  int64_t threads_used_ = 1;
  RankGroup* group_;
  int rank_;

 public:
  const TensorStore& store() const { return store_; }
  // Another rank failed: this one stops too.
  void stop() {
    abort_.store(true);
    std::lock_guard<std::mutex> wake(mu_);
    cv_.notify_all();
  }
};

}  // namespace

CpuExecResult run_cpu(const Module& scheduled, const Weights& w, const CpuRunOptions& o) {
  if (is_prefill_chunk(scheduled))
    throw Error("the module is a prefill chunk (attr chunk): it fills the KV caches for its decode module "
                "(run_cpu_prefilled; mpk run --prefill-chunk)");
  if (tp_ranks(scheduled) > 1)
    throw Error("the module is sharded for " + std::to_string(tp_ranks(scheduled)) +
                " tensor-parallel ranks: run it on that many ranks");
  Engine engine(scheduled, w, o);
  return engine.run();
}

CpuExecResult run_cpu_tp(const Module& scheduled, const std::vector<Weights>& rank_weights, const CpuRunOptions& o) {
  const int64_t ranks = tp_ranks(scheduled);
  if (static_cast<int64_t>(rank_weights.size()) != ranks)
    throw Error("the module is sharded for " + std::to_string(ranks) + " tensor-parallel ranks, but " +
                std::to_string(rank_weights.size()) + " ranks' weights were given");
  if (o.order != CpuOrder::kSchedule) throw Error("a tensor-parallel run takes schedule order");
  RankGroup group;
  std::vector<std::unique_ptr<Engine>> engines;
  CpuRunOptions rank_options = o;
  rank_options.on_step = nullptr;  // rank 0 reports the tokens
  for (int r = 0; r < ranks; ++r) {
    try {
      engines.push_back(std::make_unique<Engine>(scheduled, rank_weights[r], r == 0 ? o : rank_options, &group, r));
    } catch (const Error& e) {
      throw Error("rank " + std::to_string(r) + ": " + e.what());
    }
    group.engines.push_back(engines.back().get());
    group.stores.push_back(&engines.back()->store());
  }
  std::vector<CpuExecResult> results(ranks);
  std::mutex error_mu;
  std::string error;  // the first rank's failure; the others stop
  auto body = [&](int r) {
    try {
      results[r] = engines[r]->run();
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> lock(error_mu);
      if (!error.empty()) return;
      error = "rank " + std::to_string(r) + ": " + e.what();
      for (Engine* rank : group.engines) rank->stop();
    }
  };
  std::vector<std::thread> threads;
  group.start = Clock::now();
  for (int r = 1; r < ranks; ++r) threads.emplace_back(body, r);
  body(0);
  for (std::thread& t : threads) t.join();
  if (!error.empty()) throw Error(error);
  check_ranks_agree(results);
  for (int r = 1; r < ranks; ++r)
    results[0].task_records.insert(results[0].task_records.end(), results[r].task_records.begin(),
                                   results[r].task_records.end());
  if (vocab_split(scheduled)) {  // each rank holds a slice of the logits
    std::vector<std::vector<float>> slices;
    for (CpuExecResult& r : results) slices.push_back(std::move(r.logits));
    results[0].logits = gather_vocab_slices(slices, results[0].batch);
    results[0].logits_shape = {results[0].batch, attr_int(scheduled.attrs, "vocab")};
  }
  return std::move(results[0]);
}

CpuPrefillResult run_cpu_prefilled(const Module& chunk, const Module& scheduled, const Weights& w,
                                   const CpuRunOptions& o) {
  if (tp_ranks(scheduled) > 1 || tp_ranks(chunk) > 1) throw Error("a prefill runs on one tensor-parallel rank");
  if (!is_prefill_chunk(chunk)) throw Error("the prefill module is not a prefill chunk (attr chunk)");
  const int64_t rows = chunk_rows(chunk);
  const int64_t end = prefill_end(prompt_length(o.prompt, o.prompt_rows), o.steps);
  CpuPrefillResult r;
  if (end <= 0) {
    r.decode = run_cpu(scheduled, w, o);
    return r;
  }
  CpuRunOptions po = o;
  po.steps = prefill_steps(end, rows);
  po.on_step = nullptr;
  Engine prefill(chunk, w, po, nullptr, 0, RunStart{true, 0, rows, end});
  r.prefill = prefill.run();
  Engine decode(scheduled, w, o, nullptr, 0,
                RunStart{false, end, 1, std::numeric_limits<int64_t>::max(), &chunk, &prefill.store()});
  r.decode = decode.run();
  r.decode.first_step = end;
  return r;
}

std::optional<CpuOrder> parse_cpu_order(const std::string& s) {
  if (s == "schedule") return CpuOrder::kSchedule;
  if (s == "random") return CpuOrder::kRandom;
  return std::nullopt;
}

}  // namespace mpk
