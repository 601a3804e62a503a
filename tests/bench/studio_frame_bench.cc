// mpk-studio's timeline at scale: CPU time to build one whole app frame (headless, no
// rendering: layout, hit testing, draw lists) on a run of about 1M task executions, at
// full zoom-out, at one step, and deep zoom, the worst of a sweep over 15 zoom levels,
// panning, plus the time to open the run.
//
//   studio_frame_bench [trace.db [run]]
//   studio_frame_bench --make out.db [MODEL [STEPS [WORKERS [POLICY]]]]
// Without a trace it simulates qwen3-8b for 27 steps (37,362 tasks a step on 132
// workers: 1.01M executions) into a temporary trace.db, shaped like a GPU trace (linear
// groups recorded member by member, workers on other SMs: tests/studio/gpu_like_trace.h).
// --make appends such a run to out.db (default qwen3-8b, 27 steps, the machine's workers,
// critical-path; WORKERS 0: the machine's) and exits: docs/studio.md's screenshots are
// taken of one (scripts/studio_screenshots.sh).
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <functional>
#include <cstdio>
#include <string>

#include "ir/import/import.h"
#include "passes/pass_manager.h"
#include "studio/ui/app.h"
#include "studio/ui/headless_frame.h"
#include "studio/model/timeline_layout.h"
#include "tests/studio/gpu_like_trace.h"
#include "traces/simulator.h"

namespace {

using namespace mpk;
using namespace mpk::studio;

double cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

double wall_s(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void make_trace(const std::string& path, const std::string& model, int32_t steps, int32_t workers,
                const std::string& policy_name = "critical-path") {
  std::printf("simulating %s, %d steps%s, %s, GPU-shaped -> %s\n", model.c_str(), steps,
              workers > 0 ? (", " + std::to_string(workers) + " workers").c_str() : "", policy_name.c_str(),
              path.c_str());
  Module m = import_model(model, ImportOptions{});
  const std::string policy = policy_name + (workers > 0 ? ",workers=" + std::to_string(workers) : std::string());
  PassManager pm(parse_pipeline("decompose,infer-deps,assign-sm{policy=" + policy + "}"));
  pm.run(m);
  RunInfo info;
  info.kind = "sim";
  info.model = model + " (GPU-shaped)";
  info.steps = steps;
  const int32_t n = static_cast<int32_t>(m.graph.schedule.workers.size());
  write_run(path, m, info, testing::gpu_like(m, simulate(m, CostParams::from_machine(m.machine), steps), n));
}

// Mean CPU time of `frames` frames with `setup` applied before each.
void measure(const char* name, StudioState& s, HeadlessFrame& h, const std::function<void(int)>& setup) {
  const auto frame = [&] { draw_app_frame(s); };
  setup(0);
  h.run(frame, 2);  // settle
  constexpr int kFrames = 20;
  double total = 0;
  for (int i = 0; i < kFrames; ++i) {
    setup(i);
    const double c0 = cpu_ms();
    h.run(frame);
    total += cpu_ms() - c0;
  }
  std::printf("%-44s %8.2f ms CPU/frame   %7lld boxes (%lld merged), window %s\n", name, total / kFrames,
              static_cast<long long>(s.timeline.boxes_drawn), static_cast<long long>(s.timeline.merged_boxes),
              format_duration(s.window.span()).c_str());
}

// Mean CPU time of 10 frames at the state's window, nudged by a picosecond a frame so
// that nothing drawn for the window is reused (as while zooming or panning).
double measure_quiet(StudioState& s, HeadlessFrame& h) {
  const auto frame = [&] {
    s.window.t0_ns += 1e-3;
    s.window.t1_ns += 1e-3;
    draw_app_frame(s);
  };
  h.run(frame, 2);
  const double c0 = cpu_ms();
  h.run(frame, 10);
  return (cpu_ms() - c0) / 10;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc >= 3 && std::string(argv[1]) == "--make") {
      make_trace(argv[2], argc > 3 ? argv[3] : "qwen3-8b", argc > 4 ? std::stoi(argv[4]) : 27,
                 argc > 5 ? std::stoi(argv[5]) : 0, argc > 6 ? argv[6] : "critical-path");
      return 0;
    }
    const bool own = argc < 2;
    const std::string path = own ? "/tmp/mpk_studio_bench_" + std::to_string(::getpid()) + ".db" : argv[1];
    if (own) make_trace(path, "qwen3-8b", 27, 0);
    StudioState s;
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = cpu_ms();
    if (!open_trace(s, path, argc > 2 ? std::stoll(argv[2]) : -1)) {
      std::fprintf(stderr, "studio_frame_bench: %s\n", s.status.c_str());
      return 1;
    }
    const TraceModel& m = *s.model;
    std::printf("run %lld: %zu executions, %d workers, %d steps, %s\n", static_cast<long long>(s.run),
                m.executions().size(), m.num_workers(), m.num_steps(),
                format_duration(static_cast<double>(m.duration_ns())).c_str());
    std::printf("%-44s %8.2f s CPU, %.2f s wall\n", "open the run (TraceModel)", (cpu_ms() - c0) * 1e-3,
                wall_s(t0));

    HeadlessFrame h(1600, 1000);
    const double d = static_cast<double>(m.duration_ns());
    const StepRecord mid = m.steps()[m.steps().size() / 2];
    const double step_t0 = static_cast<double>(mid.start_ns), step_span = static_cast<double>(mid.end_ns - mid.start_ns);
    measure("full zoom-out, default rows (8 px)", s, h, [&](int) { fit_window(s); });
    measure("full zoom-out, all 132 rows (6 px)", s, h, [&](int) {
      s.timeline.row_height = 6;
      fit_window(s);
    });
    s.timeline.row_height = 8;
    measure("one step", s, h, [&](int) { s.window = {step_t0, step_t0 + step_span}; });
    measure("deep zoom (20 us)", s, h, [&](int) { s.window = {step_t0 + 0.5 * step_span, step_t0 + 0.5 * step_span + 2e4}; });
    // Every zoom from the whole run down to 1/2^14 of it, centred on the middle step: the
    // worst one (slices switch from the coarse picture to exact sums in between).
    double worst = 0, worst_span = 0;
    for (int k = 0; k <= 14; ++k) {
      const double span = 1.02 * d / std::pow(2.0, k);
      const double c = step_t0 + 0.5 * step_span;
      s.window = {c - span / 2, c + span / 2};
      const double ms = measure_quiet(s, h);
      if (ms > worst) worst = ms, worst_span = span;
    }
    std::printf("%-44s %8.2f ms CPU/frame   at a window of %s\n", "zoom sweep (15 levels), the worst", worst,
                format_duration(worst_span).c_str());
    measure("panning at 1 ms (a new window every frame)", s, h, [&](int i) {
      const double t = 0.1 * d + 0.01 * d * i;
      s.window = {t, t + 1e6};
    });
    if (own) {
      std::remove(path.c_str());
      std::remove((path + "-journal").c_str());
    }
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "studio_frame_bench: %s\n", e.what());
    return 1;
  }
}
