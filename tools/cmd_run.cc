// `mpk run`: compile a model and decode on one backend (cpu, sim, gpu). Parses the
// options into a RunRequest, picks the backend (--backend, else gpu when registered and
// available, else sim when registered, else cpu) and dispatches to it. `--graph FILE`
// runs a saved schedule (e.g. one edited in mpk-studio) as it is. Also holds the
// run-backend registry (tools/run_backends.h).
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

#include "ir/error.h"
#include "ir/serialize.h"
#include "runtime/cpu/memory_budget.h"
#include "tools/args.h"
#include "tools/run_backends.h"
#include "tools/subcommands.h"

namespace mpk {

namespace {

std::vector<RunBackend>& backend_table() {
  static std::vector<RunBackend> t;
  return t;
}

}  // namespace

bool register_run_backend(const RunBackend& b) {
  backend_table().push_back(b);
  std::sort(backend_table().begin(), backend_table().end(),
            [](const RunBackend& x, const RunBackend& y) { return std::strcmp(x.name, y.name) < 0; });
  return true;
}

const std::vector<RunBackend>& run_backends() { return backend_table(); }

namespace {

constexpr const char* kUsage =
    "usage: mpk run [--backend cpu|sim|gpu] [--model PRESET|HF_DIR|config.json|FILE.mpk]\n"
    "               [--policy P | --pipeline PIPELINE] [--steps N] [--batch N] [--max-seq N]\n"
    "               | --graph SCHEDULED.mpk\n"
    "               [--prompt 1,2,3] [--order schedule|random] [--seed S] [--threads T]\n"
    "               [--dump-logits FILE] [--trace trace.db] [--weights-seed S] [--watchdog SEC]\n"
    "               [--costs COSTS.json]\n\n"
    "Compiles the model (default pipeline with assign-sm{policy=P}, or --pipeline) and\n"
    "decodes --steps steps, step s at position s, reading prompt token s while s < prompt\n"
    "length and the previous step's argmax after. Prints the generated token ids and, per\n"
    "step, the token and the top logit. Weights: the checkpoint's safetensors, else random\n"
    "bf16 weights from --weights-seed. --dump-logits writes the last step's logits as raw\n"
    "little-endian f32 [batch, vocab] and their shape to FILE.json.\n"
    "  --graph: run a saved schedule as it is (e.g. one edited in mpk-studio); it takes\n"
    "  no --model, --policy, --pipeline, --batch or --max-seq.\n"
    "  --order, --seed, --threads: cpu backend (random: a seeded order that respects only\n"
    "  the events). --watchdog: seconds a wait may make no progress before it fails.\n"
    "  --costs: a cost file (e.g. from mpk calibrate) that assign-sm schedules with (unless\n"
    "  --pipeline gives the pipeline) and the sim backend simulates with.\n"
    "  A run fails, naming the step and batch row, when a step's logits hold NaN or\n"
    "  infinity (cpu: every step; gpu: the last step, the only logits the host sees).\n";

// The option ranges (tools/args.h) and the memory budget (runtime/cpu/memory_budget.h).
void print_limits() {
  std::printf("  ranges: --steps %lld..%lld and at most the model's max_seq_len (every backend),\n"
              "  --batch %lld..%lld, --max-seq %lld..%lld (0: the default), --threads %lld..%lld\n"
              "  (0: all cores), --watchdog %g..%g seconds; prompt tokens lie in the vocabulary.\n\n",
              static_cast<long long>(kStepsRange.lo), static_cast<long long>(kStepsRange.hi),
              static_cast<long long>(kBatchRange.lo), static_cast<long long>(kBatchRange.hi),
              static_cast<long long>(kMaxSeqRange.lo), static_cast<long long>(kMaxSeqRange.hi),
              static_cast<long long>(kThreadsRange.lo), static_cast<long long>(kThreadsRange.hi),
              kWatchdogRange.lo, kWatchdogRange.hi);
  std::printf("memory: the cpu backend's tensors and the random weights (any backend) must fit\n"
              "the host memory budget: 3/4 of physical memory, or the environment variable\n"
              "%s (in MiB) when set; a larger run is refused, naming its\n"
              "largest tensor.\n\n"
              "backends:\n",
              kMemoryBudgetEnv);
}

const RunBackend* find_backend(const std::string& name) {
  for (const RunBackend& b : run_backends())
    if (name == b.name) return &b;
  return nullptr;
}

bool is_available(const RunBackend& b) { return !b.available || b.available(); }

const RunBackend& choose_backend(const Args& args) {
  if (args.has("backend")) {
    const std::string name = args.get("backend");
    const RunBackend* b = find_backend(name);
    if (!b) {
      std::string known;
      for (const RunBackend& x : run_backends()) known += (known.empty() ? "" : ", ") + std::string(x.name);
      throw Error("unknown backend '" + name + "' (known: " + known + ")");
    }
    if (!is_available(*b)) throw Error("backend '" + name + "' is not available on this machine");
    return *b;
  }
  for (const char* name : {"gpu", "sim", "cpu"}) {
    const RunBackend* b = find_backend(name);
    if (b && is_available(*b)) return *b;
  }
  throw Error("no run backend is available");
}

// --graph FILE: a scheduled module, run as it is.
std::string scheduled_graph(const Args& args) {
  for (const char* other : {"model", "policy", "pipeline", "batch", "max-seq"})
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

RunRequest parse_request(const Args& args) {
  RunRequest r;
  r.model = args.has("graph") ? scheduled_graph(args) : args.get("model", r.model);
  if (args.has("policy") && args.has("pipeline"))
    throw Error("give --policy or --pipeline, not both (a pipeline names its policy in assign-sm)");
  r.policy = args.get("policy", r.policy);
  r.pipeline = args.get("pipeline", r.pipeline);
  r.steps = args.get_int("steps", r.steps, kStepsRange);
  r.batch = args.get_int("batch", r.batch, kBatchRange);
  r.max_seq_len = args.get_int("max-seq", r.max_seq_len, kMaxSeqRange);
  if (args.has("prompt")) r.prompt = parse_int_list(args.get("prompt"), "option '--prompt'", kPromptTokenRange);
  if (r.prompt.empty()) throw Error("option '--prompt' needs at least one token");
  if (static_cast<int64_t>(r.prompt.size()) > kMaxPromptTokens)
    throw Error("option '--prompt' has " + std::to_string(r.prompt.size()) + " tokens, more than " +
                std::to_string(kMaxPromptTokens));
  r.order = args.get("order", r.order);
  if (r.order != "schedule" && r.order != "random")
    throw Error("option '--order' expects 'schedule' or 'random', got '" + r.order + "'");
  r.seed = args.get_u64("seed", r.seed);
  r.threads = args.get_int("threads", r.threads, kThreadsRange);
  r.dump_logits = args.get("dump-logits");
  r.trace = args.get("trace");
  r.weights_seed = args.get("weights-seed", r.weights_seed);
  parse_u64(r.weights_seed, "option '--weights-seed'");
  r.watchdog_s = args.get_number("watchdog", r.watchdog_s, kWatchdogRange);
  r.costs = args.get("costs");
  return r;
}

int cmd_run(int argc, char** argv) {
  const Args args(argc, argv,
                  {"backend", "model", "graph", "policy", "pipeline", "steps", "batch", "max-seq",
                   "prompt", "order", "seed", "threads", "dump-logits", "trace", "weights-seed",
                   "watchdog", "costs"},
                  {"help", "h"});
  if (args.flag("help") || args.flag("h")) {
    std::fputs(kUsage, stdout);
    print_limits();
    for (const RunBackend& b : run_backends())
      std::printf("  %-5s %s%s\n", b.name, b.summary, is_available(b) ? "" : " (not available here)");
    return 0;
  }
  if (!args.positionals().empty())
    throw Error("unexpected argument '" + args.positionals().front() + "' (see --help)");
  const RunRequest request = parse_request(args);
  const RunBackend& backend = choose_backend(args);
  return backend.run(request);
}

}  // namespace
}  // namespace mpk

MPK_SUBCOMMAND(run, "compile a model and decode on a backend (cpu, sim, gpu)", mpk::cmd_run);
