// `mpk run`: compile a model and decode on one backend (cpu, sim, gpu), a thin loop over
// the driver: parse the options, compile (driver/compile.h), make the executor (--backend,
// else gpu when built and available, else sim, else cpu; driver/executor.h), run it,
// print (tools/run_report.h), record the run (driver/record.h). `--graph FILE` runs a
// saved schedule (e.g. one edited in mpk-studio) as it is. Text in and out (--prompt TEXT,
// --chat, the generated text as it is generated): tools/run_text.h, docs/text.md.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "driver/compile.h"
#include "driver/executor.h"
#include "driver/record.h"
#include "ir/error.h"
#include "ir/serialize.h"
#include "runtime/cpu/memory_budget.h"
#include "tools/args.h"
#include "tools/run_report.h"
#include "tools/run_text.h"
#include "tools/subcommands.h"
#include "traces/text_table.h"

namespace mpk {
namespace {

// What `mpk run` was asked for.
struct RunRequest {
  CompileRequest compile;
  ExecutorOptions executor;
  PromptOptions prompt;
  ExecRequest exec;
  std::string dump_logits;  // path, "" = none
  std::string trace;        // trace.db path, "" = none (sim: trace.db)
  int64_t prefill_chunk = 0;  // rows of the prefill chunk; 0: one decode step per prompt token; or kAutoPrefillChunk
};

constexpr const char* kUsage =
    "usage: mpk run [--backend cpu|sim|gpu] [--model PRESET|HF_DIR|config.json|FILE.mpk]\n"
    "               [--policy P | --pipeline PIPELINE] [--steps N] [--batch N] [--max-seq N]\n"
    "               [--tp N] | --graph SCHEDULED.mpk\n"
    "               [--prompt TEXT [--chat [--system TEXT]] [--tokenizer DIR] | --prompt-ids 1,2,3]\n"
    "               [--max-new-tokens N] [--order schedule|random] [--seed S] [--threads T]\n"
    "               [--dump-logits FILE] [--trace trace.db] [--weights-seed S] [--watchdog SEC]\n"
    "               [--costs COSTS.json] [--prefill-chunk auto|C]\n\n"
    "Compiles the model (default pipeline with assign-sm{policy=P}, or --pipeline) and\n"
    "decodes --steps steps, step s at position s, reading prompt token s while s < prompt\n"
    "length and the previous step's argmax after. Prints the generated token ids and, per\n"
    "step, the token and the top logit. Weights: the checkpoint's safetensors, else random\n"
    "bf16 weights from --weights-seed. --dump-logits writes the last step's logits as raw\n"
    "little-endian f32 [batch, vocab] and their shape to FILE.json.\n"
    "  --prompt TEXT: tokenized with the checkpoint's tokenizer (tokenizer.json beside its\n"
    "  config.json, or --tokenizer DIR); the generated text goes to stdout as it is\n"
    "  generated (everything else to stderr), stopping at an EOS token of the configs or\n"
    "  after --max-new-tokens (default 128, within max_seq_len); then the time to the first\n"
    "  token, the decode speed and why it stopped. --chat: the prompt as one user turn of\n"
    "  the checkpoint's chat template (Llama 3, Llama 3.1+, ChatML/Qwen), --system TEXT a\n"
    "  system turn before it. --prompt-ids 1,2,3: token ids (1,2;3,4: a row per batch row,\n"
    "  all of one length); a --prompt of integers is taken as ids where no tokenizer is\n"
    "  found. --max-new-tokens N: steps = prompt + N - 1.\n"
    "  --tp N: tensor parallel over N ranks (shard-tp{ranks=N} before the pipeline): the cpu\n"
    "  backend runs N ranks at once, the gpu backend one megakernel on each of GPUs 0..N-1.\n"
    "  --prefill-chunk C: the prompt's first P-1 positions are prefilled C at a time by a\n"
    "  prefill chunk of the model (prefill-chunk{rows=C} before the pipeline; docs/ir.md), then\n"
    "  decoding goes on from step P-1; 0 feeds one decode step per prompt token; auto (the gpu\n"
    "  backend's default): by the model and P-1, up to 32 (16 where 32 rows of the hidden size\n"
    "  do not fit a chunk's shared memory), 64, else 128; 0 for a batch or with --tp.\n"
    "  --graph: run a saved schedule as it is (e.g. one edited in mpk-studio); it takes\n"
    "  no --model, --policy, --pipeline, --batch, --max-seq or --tp.\n"
    "  --order, --seed, --threads: cpu backend (random: a seeded order that respects only\n"
    "  the events). --watchdog: seconds a wait may make no progress before it fails.\n"
    "  --costs: a cost file (e.g. from mpk calibrate) that assign-sm schedules with (unless\n"
    "  --pipeline gives the pipeline) and the sim backend simulates with.\n"
    "  A run fails, naming the step and batch row, when a step's logits hold NaN or\n"
    "  infinity (cpu: every step; gpu: the last step, the only logits the host sees).\n";

// The option ranges (tools/args.h) and the memory budget (runtime/cpu/memory_budget.h).
void print_limits() {
  std::printf("  ranges: --steps %lld..%lld and at most the model's max_seq_len (every backend),\n"
              "  --batch %lld..%lld, --tp %lld..%lld, --max-seq %lld..%lld (0: the default), --threads %lld..%lld\n"
              "  (0: all cores), --watchdog %g..%g seconds, --prefill-chunk %lld..%lld (the gpu backend:\n"
              "  batch 1); prompt tokens lie in the vocabulary.\n\n",
              static_cast<long long>(kStepsRange.lo), static_cast<long long>(kStepsRange.hi),
              static_cast<long long>(kBatchRange.lo), static_cast<long long>(kBatchRange.hi),
              static_cast<long long>(kTpRange.lo), static_cast<long long>(kTpRange.hi),
              static_cast<long long>(kMaxSeqRange.lo), static_cast<long long>(kMaxSeqRange.hi),
              static_cast<long long>(kThreadsRange.lo), static_cast<long long>(kThreadsRange.hi),
              kWatchdogRange.lo, kWatchdogRange.hi, static_cast<long long>(kPrefillChunkRange.lo),
              static_cast<long long>(kPrefillChunkRange.hi));
  std::printf("memory: the cpu backend's tensors and the random weights (any backend) must fit\n"
              "the host memory budget: 3/4 of physical memory, or the environment variable\n"
              "%s (in MiB) when set; a larger run is refused, naming its\n"
              "largest tensor.\n\n"
              "backends:\n",
              kMemoryBudgetEnv);
}

const ExecutorKind& choose_backend(const Args& args) {
  if (args.has("backend")) return usable_executor(args.get("backend"));
  for (const char* name : {"gpu", "sim", "cpu"}) {
    const ExecutorKind* kind = find_executor(name);
    if (kind && kind->available()) return *kind;
  }
  throw Error("no run backend is available");
}

// --graph FILE: a scheduled module, run as it is.
std::string scheduled_graph(const Args& args) {
  for (const char* other : {"model", "policy", "pipeline", "batch", "max-seq", "tp"})
    if (args.has(other))
      throw Error(std::string("--graph runs a saved schedule as it is; it takes no --") + other);
  const std::string path = args.get("graph");
  if (!std::filesystem::is_regular_file(path))
    throw Error("--graph: '" + path + "' is not a file");
  if (load_module(path).graph.schedule.empty())
    throw Error("--graph: '" + path + "' has no schedule (schedule it with mpk-opt, or give it "
                "as --model)");
  return path;
}

RunRequest parse_request(const Args& args, const std::string& backend) {
  RunRequest r;
  CompileRequest& c = r.compile;
  c.model = args.has("graph") ? scheduled_graph(args) : args.get("model", c.model);
  if (args.has("policy") && args.has("pipeline"))
    throw Error("give --policy or --pipeline, not both (a pipeline names its policy in assign-sm)");
  c.policy = args.get("policy");
  c.pipeline = args.get("pipeline");
  r.prompt = parse_prompt_options(args);
  c.batch = args.get_int("batch", c.batch, kBatchRange);
  c.max_seq_len = args.get_int("max-seq", c.max_seq_len, kMaxSeqRange);
  c.tp = args.has("tp") ? args.get_int("tp", 1, kTpRange) : 0;
  ExecutorOptions& x = r.executor;
  x.order = args.get("order", x.order);
  if (x.order != "schedule" && x.order != "random")
    throw Error("option '--order' expects 'schedule' or 'random', got '" + x.order + "'");
  x.seed = args.get_u64("seed", x.seed);
  x.threads = args.get_int("threads", x.threads, kThreadsRange);
  r.dump_logits = args.get("dump-logits");
  r.trace = args.get("trace");
  x.weights_seed = parse_u64(args.get("weights-seed", "0"), "option '--weights-seed'");
  x.watchdog_s = args.get_number("watchdog", x.watchdog_s, kWatchdogRange);
  x.costs = c.costs = args.get("costs");
  r.prefill_chunk = prefill_chunk_option(args, backend == "gpu" ? "auto" : "0");
  if (r.prefill_chunk > 0 && c.tp > 0) throw Error("--prefill-chunk runs on one rank; it takes no --tp");
  return r;
}

// The prefill chunk of the run's model (`decode`) when asked for and the prompt has more
// than one token per row (nullopt otherwise); auto by the model's hidden size and the
// prompt (auto_prefill_chunk), none for a batch, with --tp, or for a module that is not
// an imported model (no attr hidden).
std::optional<Compiled> compile_prefill(const RunRequest& req, const Module& decode) {
  const int64_t per_row = static_cast<int64_t>(req.exec.prompt.size()) / req.exec.prompt_rows;
  int64_t chunk = req.prefill_chunk;
  if (chunk == kAutoPrefillChunk) {
    const int64_t hidden = attr_int_or(decode.attrs, "hidden", 0);
    chunk = req.exec.prompt_rows > 1 || req.compile.tp > 0 || hidden <= 0 ? 0 : auto_prefill_chunk(hidden, per_row - 1);
  }
  if (chunk == 0 || per_row < 2) return {};
  CompileRequest c = req.compile;
  c.chunk = chunk;
  return compile(c);
}

// Stores a run's prefill (its own run, the chunk module's) and then the run; returns the
// run's id.
int64_t record_with_prefill(const RunRequest& req, const Module& m, const Executor& ex, const ExecResult& r,
                            const std::string& trace, StoredRun* stored = nullptr,
                            const std::function<void()>& before_commit = nullptr) {
  std::string note;
  if (r.prefill) {
    const int64_t id = record_run(trace, *req.exec.prefill, ex, *r.prefill,
                                  {req.compile.model, "", "prefill: positions 0.." + std::to_string(r.first_step - 1)});
    note = "after the prefill of run " + std::to_string(id);
  }
  return record_run(trace, m, ex, r, {req.compile.model, "", note}, stored, before_commit);
}

// The sim backend: simulate, always store the run (default trace.db), report from it.
// The module's verification runs meanwhile; the run commits only once it has passed.
int run_sim(RunRequest req, CompileInFlight& compiling) {
  const Compiled& c = compiling.compiled();
  const ResolvedPrompt prompt = resolve_prompt(req.prompt, c.module);
  req.exec.prompt = prompt.ids;
  req.exec.prompt_rows = prompt.rows;
  req.exec.steps = prompt.steps;
  check_steps_fit(c.module, req.exec.steps);
  const std::optional<Compiled> prefill = compile_prefill(req, c.module);
  if (prefill) req.exec.prefill = &prefill->module;
  const std::unique_ptr<Executor> sim = make_executor("sim", c.module, req.executor);
  if (prompt.text())
    std::printf("prompt    %s: %lld steps for up to %lld new tokens (the simulator has no tokens)\n",
                prompt.description.c_str(), static_cast<long long>(req.exec.steps),
                static_cast<long long>(prompt.max_new_tokens));
  const std::string trace = req.trace.empty() ? "trace.db" : req.trace;
  const ExecResult r = sim->run(req.exec);
  const auto t0 = std::chrono::steady_clock::now();
  StoredRun stored;
  record_with_prefill(req, c.module, *sim, r, trace, &stored, [&] { compiling.wait_verified(); });
  print_sim_report(c, *sim, r, trace, stored, seconds_since(t0));
  return 0;
}

// After a cpu or gpu run: dump the logits, store the run.
void save_run(const RunRequest& req, const Module& m, const Executor& ex, const ExecResult& r, std::FILE* out) {
  if (!req.dump_logits.empty()) {
    write_logits(req.dump_logits, r.logits, r.batch, r.steps - 1, req.compile.model);
    std::fprintf(out, "logits: f32 [%lld, %lld] -> %s (+ .json)\n", static_cast<long long>(r.batch),
                 static_cast<long long>(r.logits.size()) / r.batch, req.dump_logits.c_str());
  }
  if (req.exec.record) {
    const int64_t id = record_with_prefill(req, m, ex, r, req.trace);
    int32_t ranks = 1;  // a tensor-parallel launch is stored as one run per rank, ids in a row
    for (const Execution& x : r.executions) ranks = std::max(ranks, x.rank + 1);
    const std::string runs = ranks > 1 ? strf("runs %lld..%lld (one per rank)", static_cast<long long>(id),
                                              static_cast<long long>(id + ranks - 1))
                             : r.prefill ? strf("run %lld (its prefill: run %lld)", static_cast<long long>(id),
                                                static_cast<long long>(id - 1))
                                         : strf("run %lld", static_cast<long long>(id));
    if (std::string(ex.kind()) == "gpu")
      std::fprintf(out, "trace: %s (%zu executions%s) -> %s\n", runs.c_str(), r.executions.size(),
                   r.dropped ? ", some dropped: buffer full" : "", req.trace.c_str());
    else
      std::fprintf(out, "trace: %s -> %s\n", runs.c_str(), req.trace.c_str());
  }
}

// A text prompt on cpu or gpu: the header and the summary on stderr, the generated text on
// stdout as it arrives, stopping at EOS.
int run_text(const RunRequest& req, const Compiled& c, Executor& ex, const ResolvedPrompt& prompt) {
  const Module& m = c.module;
  if (!prompt.repair_note.empty()) std::fprintf(stderr, "%s\n", prompt.repair_note.c_str());
  print_run_header(stderr, c, ex, attr_int_or(m.attrs, "batch", 0), attr_int_or(m.attrs, "max_seq_len", 0), false);
  std::fprintf(stderr, "prompt   %s; up to %lld new tokens%s\n\n", prompt.description.c_str(),
               static_cast<long long>(prompt.max_new_tokens),
               attr_int_or(m.attrs, "batch", 1) > 1 ? " (text of batch row 0)" : "");
  TextPrinter printer(*prompt.tokenizer, prompt.ids.size(), stdout);
  ExecRequest e = req.exec;
  e.on_step = std::ref(printer);
  e.stop = {prompt.tokenizer->eos_ids(), static_cast<int64_t>(prompt.ids.size()) - 1};
  printer.start();
  const ExecResult r = ex.run(e);
  printer.finish();
  print_text_summary(stderr, prompt, printer, ex, r);
  save_run(req, m, ex, r, stderr);
  return 0;
}

// The cpu and gpu backends with ids: decode, print the tokens, dump logits, store the run.
int run_decode(const RunRequest& req, const Compiled& c, Executor& ex) {
  const Module& m = c.module;
  const bool gpu = std::string(ex.kind()) == "gpu";
  const int64_t max_seq_len = attr_int_or(m.attrs, "max_seq_len", 0);
  if (gpu) {  // the megakernel is ready: say so before the launch
    print_run_header(stdout, c, ex, attr_int_or(m.attrs, "batch", 0), max_seq_len);
    std::printf("\n");
  }
  const ExecResult r = ex.run(req.exec);
  if (!gpu) {  // the cpu line names the threads the run used
    print_run_header(stdout, c, ex, r.batch, max_seq_len);
    std::printf("prepare  compile %.3f s, weights %.3f s\n\n", c.compile_s, ex.weights_seconds());
  }
  print_decode(ex, r, req.exec.prompt.size() / req.exec.prompt_rows, req.exec.record);
  save_run(req, m, ex, r, stdout);
  return 0;
}

int cmd_run(int argc, char** argv) {
  const Args args(argc, argv,
                  {"backend", "model", "graph", "policy", "pipeline", "steps", "batch", "max-seq", "tp",
                   "prompt", "prompt-ids", "system", "tokenizer", "max-new-tokens", "order", "seed",
                   "threads", "dump-logits", "trace", "weights-seed", "watchdog", "costs", "prefill-chunk"},
                  {"help", "h", "chat"});
  if (args.flag("help") || args.flag("h")) {
    std::fputs(kUsage, stdout);
    print_limits();
    for (const ExecutorKind& k : executor_kinds())
      std::printf("  %-5s %s%s\n", k.name, k.summary, k.available() ? "" : " (not available here)");
    return 0;
  }
  if (!args.positionals().empty())
    throw Error("unexpected argument '" + args.positionals().front() + "' (see --help)");
  const ExecutorKind& kind = choose_backend(args);
  const std::string name = kind.name;
  RunRequest req = parse_request(args, name);
  if (name == "cpu" && req.executor.order == "random" && !req.trace.empty())
    throw Error("--trace records schedule-order runs; random order has no workers");
  req.exec.record = !req.trace.empty() || name == "sim";
  if (name == "sim") {
    CompileInFlight compiling(req.compile);
    return run_sim(req, compiling);
  }
  const Compiled c = compile(req.compile);
  const ResolvedPrompt prompt = resolve_prompt(req.prompt, c.module);
  req.exec.prompt = prompt.ids;
  req.exec.prompt_rows = prompt.rows;
  req.exec.steps = prompt.steps;
  check_steps_fit(c.module, req.exec.steps);
  const std::optional<Compiled> prefill = compile_prefill(req, c.module);
  if (prefill) req.exec.prefill = &prefill->module;
  const std::unique_ptr<Executor> ex = kind.make(c.module, req.executor);
  return prompt.text() ? run_text(req, c, *ex, prompt) : run_decode(req, c, *ex);
}

}  // namespace
}  // namespace mpk

MPK_SUBCOMMAND(run, "compile a model and decode on a backend (cpu, sim, gpu)", mpk::cmd_run);
