// `mpk bench`: decode speed on the GPU. Compiles the model (random weights for a preset)
// and its megakernel, measures the device-to-device copy bandwidth in the same run, and
// prints the median per-token latency of the megakernel and/or the per-op baseline
// (the same task bodies, one launch per operator, a step captured in one CUDA graph),
// the bandwidth floor (weight bytes per token / copy bandwidth) and the ratio.
//
// Per-token latency: a launch runs all N steps on device, so a step cannot be timed on
// its own; each repetition times one launch of N steps (N graph replays in per-op mode)
// with CUDA events and divides by N. The median over the repetitions is reported.
//
// Time to the first token (--prompt-len P): a prefill launch of the model's prefill chunk
// (--prefill-chunk C rows, docs/ir.md "Prefill chunks") over the prompt's first P - 1
// positions and the decode step P - 1, back to back, whose argmax is the first generated
// token: the sum of both launches' device times, median over the repetitions. With
// --prefill-chunk 0, one launch of P decode steps, one per prompt token.
#include <algorithm>
#include <bit>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "codegen/megakernel.h"
#include "driver/compile.h"
#include "driver/gpu_decoder.h"
#include "driver/weights.h"
#include "ir/error.h"
#include "ir/row_positions.h"
#include "tools/args.h"
#include "tools/subcommands.h"

namespace mpk {
namespace {

constexpr const char* kUsage =
    "usage: mpk bench [--model PRESET|HF_DIR|config.json] [--steps N] [--mode megakernel|per-op|both]\n"
    "                 [--policy P | --pipeline PIPELINE] [--batch N] [--max-seq N] [--prompt 1,2]\n"
    "                 [--reps R] [--warmup W] [--trace-overhead] [--weights-seed S] [--slot-kib S]\n"
    "                 [--inflight N] [--l2-prefetch on|off] [--prompt-len P [--prefill-chunk auto|C]] [--tp N]\n"
    "                 [--compile-only]\n\n"
    "Measures decode on the GPU: the median per-token latency over R launches of N steps\n"
    "(default 128 steps, 5 reps, after W warm-up launches), the copy bandwidth, the\n"
    "bandwidth floor (weight bytes per token / copy bandwidth) and the ratio to it.\n"
    "--mode per-op: the same task bodies launched one kernel per operator, each step one\n"
    "CUDA graph replay (the kernel-per-operator baseline); both: side by side.\n"
    "--max-seq: the KV cache length compiled for; default: the decode's own length (steps,\n"
    "rounded up to a power of two, at least 128), so the graph fits the decode it measures\n"
    "(decompose picks the attention splits from it).\n"
    "--trace-overhead: also time the megakernel with in-kernel tracing on.\n"
    "--slot-kib: size of one weight-stream slot in KiB (default 32).\n"
    "--inflight: weight-stream copies in flight per SM at most (default 1; 0: one per slot).\n"
    "--l2-prefetch: ask L2 for an attention task's cache rows while it waits (default on).\n"
    "--prompt-len P: also the time to the first token after a P-token prompt: a prefill of\n"
    "its first P-1 positions, C at a time (--prefill-chunk C; 0: one decode step per prompt\n"
    "token; default auto: up to P-1 = 32 (16 where 32 rows of the model's hidden size do not\n"
    "fit a chunk's shared memory whole), 64 up to 64, else 128; 0 with --tp), then the\n"
    "decode step that makes the first token.\n"
    "--tp N: tensor parallel, one megakernel on each of GPUs 0..N-1 (megakernel mode); the\n"
    "floor is then one GPU's share of the weight bytes over one GPU's copy bandwidth.\n"
    "--compile-only: compile the megakernel these options give into the cubin cache\n"
    "($MPK_CACHE_DIR) and stop; needs nvcc, no GPU (a build host can fill the cache).\n";

struct Timing {
  double median_ms = 0, min_ms = 0, max_ms = 0;  // per token
};

Timing per_token(std::vector<double> launch_ms, int64_t steps) {
  for (double& v : launch_ms) v /= static_cast<double>(steps);
  std::sort(launch_ms.begin(), launch_ms.end());
  return {launch_ms[launch_ms.size() / 2], launch_ms.front(), launch_ms.back()};
}

template <class F>
Timing measure(F&& launch, int64_t steps, int64_t warmup, int64_t reps) {
  for (int64_t i = 0; i < warmup; ++i) launch();
  std::vector<double> ms;
  for (int64_t i = 0; i < reps; ++i) ms.push_back(launch());
  return per_token(ms, steps);
}

int cmd_bench(int argc, char** argv) {
  const Args args(argc, argv,
                  {"model", "steps", "mode", "policy", "pipeline", "batch", "max-seq", "prompt", "reps",
                   "warmup", "weights-seed", "slot-kib", "inflight", "l2-prefetch", "prompt-len", "prefill-chunk",
                   "tp"},
                  {"trace-overhead", "compile-only", "help", "h"});
  if (args.flag("help") || args.flag("h")) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (!args.positionals().empty())
    throw Error("unexpected argument '" + args.positionals().front() + "' (see --help)");
  CompileRequest req;
  req.model = args.get("model", req.model);
  if (args.has("policy") && args.has("pipeline")) throw Error("give --policy or --pipeline, not both");
  req.policy = args.get("policy");
  req.pipeline = args.get("pipeline");
  const int64_t steps = args.get_int("steps", 128, kStepsRange);
  req.batch = args.get_int("batch", 1, kBatchRange);
  req.max_seq_len = args.get_int("max-seq", 0, kMaxSeqRange);
  req.tp = args.has("tp") ? args.get_int("tp", 1, kTpRange) : 0;
  GpuRunOptions o;
  o.steps = steps;
  if (args.has("prompt")) o.prompt = parse_int_list(args.get("prompt"), "option '--prompt'", kPromptTokenRange);
  const int64_t prompt_len = args.get_int("prompt-len", 0, {0, kMaxPositions});
  // Auto once the model is known (one decode step per prompt token with --tp).
  int64_t chunk = prompt_len > 1 ? prefill_chunk_option(args, "auto") : 0;
  if (chunk == kAutoPrefillChunk && req.tp > 0) chunk = 0;
  if (chunk > 0 && req.tp > 0) throw Error("--prefill-chunk runs on one GPU; give --prefill-chunk 0 with --tp");
  if (req.max_seq_len == 0)  // the decode's own length (step s is position s), or the prompt's
    req.max_seq_len = static_cast<int64_t>(
        std::bit_ceil(std::max<uint64_t>({128, static_cast<uint64_t>(steps), static_cast<uint64_t>(prompt_len)})));
  const uint64_t weights_seed = parse_u64(args.get("weights-seed", "0"), "option '--weights-seed'");
  const std::string mode = args.get("mode", "megakernel");
  if (mode != "megakernel" && mode != "per-op" && mode != "both")
    throw Error("option '--mode' expects megakernel, per-op or both, got '" + mode + "'");
  if (req.tp > 1 && mode != "megakernel") throw Error("--tp above 1 runs the megakernel only (--mode megakernel)");
  const int64_t reps = args.get_int("reps", 5, {1, 10000}), warmup = args.get_int("warmup", 2, {0, 10000});
  GpuOptions go;
  const int64_t slot_kib = args.get_int("slot-kib", go.codegen.slot_bytes / 1024, {1, 224});
  const int64_t inflight = args.get_int("inflight", go.codegen.inflight, {0, 32});
  go.codegen.slot_bytes = static_cast<int>(slot_kib * 1024);
  go.codegen.inflight = static_cast<int>(inflight);
  const std::string prefetch = args.get("l2-prefetch", "on");
  if (prefetch != "on" && prefetch != "off")
    throw Error("option '--l2-prefetch' expects on or off, got '" + prefetch + "'");
  go.codegen.l2_prefetch = prefetch == "on";
  if (!args.flag("compile-only") && !gpu_available()) throw Error("no CUDA GPU is available");

  const Compiled c = compile(req);
  if (chunk == kAutoPrefillChunk) chunk = auto_prefill_chunk(attr_int(c.module.attrs, "hidden"), prompt_len - 1);
  std::optional<Compiled> chunk_module;  // the prefill chunk (--prompt-len with --prefill-chunk)
  if (chunk > 0) {
    CompileRequest cr = req;
    cr.chunk = chunk;
    chunk_module = compile(cr);
  }
  if (args.flag("compile-only")) {
    for (const Compiled* x : {&c, chunk_module ? &*chunk_module : static_cast<const Compiled*>(nullptr)}) {
      if (!x) continue;
      const CompiledKernel k = compile_megakernel(generate_megakernel(x->module, go.codegen).source, go.compile);
      std::printf("%-11s %s %s\n", x == &c ? "megakernel" : "prefill", k.from_cache ? "already in the cache:" : "compiled into",
                  k.cubin_path.c_str());
    }
    return 0;
  }
  const Module& m = c.module;
  check_steps_fit(m, std::max(steps, prompt_len));
  const RunWeights weights = load_run_weights(m, weights_seed);
  GpuDecoder gpu(m, weights, go);
  const GpuMegakernel& g = gpu.rank0();
  const Megakernel& k = g.kernel();
  const double bw = measure_copy_bandwidth();
  const int64_t bytes = weight_bytes_per_token(m);
  const double floor_ms = static_cast<double>(bytes) / bw * 1e3;

  std::printf("gpu         %s, %d SMs\n", gpu.gpus().c_str(), g.info().sm_count);
  std::printf("model       %s, batch %d, max_seq %d, policy %s: %zu tasks, %zu events, %d workers\n",
              m.name.c_str(), k.batch, k.max_seq_len, m.graph.schedule.policy.c_str(), m.graph.tasks.size(),
              m.graph.events.size(), k.num_workers);
  if (g.compiled().from_cache)
    std::printf("megakernel  loaded from the cache (%s)\n", g.compiled().cubin_path.c_str());
  else
    std::printf("megakernel  compiled in %.1f s (%s)\n", g.compiled().compile_seconds,
                g.compiled().cubin_path.c_str());
  std::printf("            %zu task bodies, %d body + %d control threads/worker, %d x %d B weight-stream slots, "
              "%d in flight\n",
              k.instantiations.size(), k.threads, abi::kControlThreads, k.stages, k.slot_bytes, k.inflight);
  if (gpu.ranks() > 1)
    std::printf("tp          %d ranks: one megakernel per GPU, all_reduce over NVLink\n", gpu.ranks());
  std::printf("bandwidth   %.3f TB/s (device-to-device copy, read + write)\n", bw * 1e-12);
  std::printf("floor       %.3f GB/token / %.3f TB/s = %.4f ms/token\n", static_cast<double>(bytes) * 1e-9,
              bw * 1e-12, floor_ms);
  if (steps < 128) std::printf("note        fewer than 128 steps: figures are indicative only\n");
  std::printf("latency     per token = one launch of %lld steps / %lld; median of %lld launches after %lld warm-up\n",
              static_cast<long long>(steps), static_cast<long long>(steps),
              static_cast<long long>(reps), static_cast<long long>(warmup));
  auto report = [&](const char* name, const Timing& t) {
    std::printf("%-11s %.4f ms/token (min %.4f, max %.4f), %.2fx the floor\n", name, t.median_ms, t.min_ms,
                t.max_ms, t.median_ms / floor_ms);
  };
  Timing mk{}, po{};
  if (mode != "per-op") {
    mk = measure([&] { return gpu.run(o).kernel_ms; }, steps, warmup, reps);
    report("megakernel", mk);
  }
  if (mode != "megakernel") {
    GpuMegakernel& one = gpu.single("the per-op baseline");
    po = measure([&] { return one.run_per_op(o).kernel_ms; }, steps, warmup, reps);
    report("per-op", po);
    std::printf("            %lld kernel launches per step in one CUDA graph\n",
                static_cast<long long>(g.num_launches_per_op()));
  }
  if (mode == "both")
    std::printf("speedup     megakernel %.2fx faster than per-op\n", po.median_ms / mk.median_ms);
  if (args.flag("trace-overhead")) {
    if (mode == "per-op") mk = measure([&] { return gpu.run(o).kernel_ms; }, steps, warmup, reps);
    GpuRunOptions t = o;
    t.trace = true;
    const Timing tr = measure([&] { return gpu.run(t).kernel_ms; }, steps, warmup, reps);
    report("traced", tr);
    std::printf("tracing     overhead %+.2f%% (median per-token latency, tracing on vs off)\n",
                (tr.median_ms / mk.median_ms - 1) * 100);
  }
  if (prompt_len > 0) {
    GpuRunOptions p = o;
    p.steps = prompt_len;
    p.prompt.resize(static_cast<size_t>(prompt_len));
    for (int64_t i = 0; i < prompt_len; ++i) p.prompt[i] = (1 + 7919 * i) % k.vocab;  // spread over the vocabulary
    if (chunk_module) {
      GpuMegakernel& one = gpu.single("a prefill");
      GpuMegakernel prefill(chunk_module->module, weights.weights, one, go);
      std::vector<double> prefill_ms, step_ms;
      const Timing t = measure(
          [&] {
            const GpuPrefillResult r = one.run_prefilled(prefill, p);
            prefill_ms.push_back(r.prefill.kernel_ms);
            step_ms.push_back(r.decode.kernel_ms);
            return r.prefill.kernel_ms + r.decode.kernel_ms;
          },
          1, warmup, reps);
      const Timing pre = per_token(std::vector<double>(prefill_ms.end() - reps, prefill_ms.end()), 1);
      const Timing step = per_token(std::vector<double>(step_ms.end() - reps, step_ms.end()), 1);
      std::printf("ttft        %.3f ms after a %lld-token prompt (median of %lld): prefill %.3f ms (%lld positions\n"
                  "            in %lld chunk steps of %lld rows, %s), then the first decode step %.4f ms\n",
                  t.median_ms, static_cast<long long>(prompt_len), static_cast<long long>(reps), pre.median_ms,
                  static_cast<long long>(prompt_len - 1), static_cast<long long>(prefill_steps(prompt_len - 1, chunk)),
                  static_cast<long long>(chunk), prefill.compiled().from_cache ? "kernel from the cache" : "kernel compiled",
                  step.median_ms);
    } else {
      const Timing t = measure([&] { return gpu.run(p).kernel_ms; }, 1, warmup, reps);
      std::printf("ttft        %.3f ms after a %lld-token prompt (median of %lld launches; one decode step per\n"
                  "            prompt token, %.4f ms each)\n",
                  t.median_ms, static_cast<long long>(prompt_len), static_cast<long long>(reps),
                  t.median_ms / static_cast<double>(prompt_len));
    }
  }
  return 0;
}

}  // namespace
}  // namespace mpk

MPK_SUBCOMMAND(bench, "measure decode latency on the GPU (megakernel and per-op baseline)", mpk::cmd_bench);
