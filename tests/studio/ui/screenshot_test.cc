// `mpk-studio --screenshot` under Xvfb: renders a real trace into a PNG, which is read
// back (stb_image) and checked: the requested size, not blank, and the timeline's rows
// show the operator kinds' colours; in a Fit view of a GPU-shaped run, where small tasks
// merge, the share of idle pixels in the rows matches the run's idle share; a
// tensor-parallel launch shows its other rank's rows in the kinds' colours. Bad input
// exits non-zero with a message. Skips, saying so, where xvfb-run is not installed.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "stb_image.h"
#include "studio/ui/app.h"
#include "studio/ui/colors.h"
#include "studio/ui/headless_frame.h"
#include "tests/studio/rank_test_runs.h"
#include "tests/studio/studio_test_runs.h"

namespace mpk::studio {
namespace {

using mpk::testing::TempPath;

bool have_xvfb() { return std::system("command -v xvfb-run >/dev/null 2>&1") == 0; }

// Runs mpk-studio under xvfb-run; returns its exit status, stderr in *err.
int run_studio(const std::string& args, std::string* err) {
  TempPath log("studio_screenshot.log");
  const std::string cmd = "xvfb-run -a -s '-screen 0 1600x1000x24' " MPK_BINARY_DIR
                          "/studio/mpk-studio " + args + " >/dev/null 2>" + log.str();
  const int rc = std::system(cmd.c_str());
  std::ifstream in(log.str());
  std::stringstream ss;
  ss << in.rdbuf();
  *err = ss.str();
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

struct Image {
  int w = 0, h = 0;
  std::vector<uint32_t> px;  // IM_COL32 layout: R in the low byte
  uint32_t at(int x, int y) const { return px[static_cast<size_t>(y) * w + x]; }
};

Image load_png(const std::string& path) {
  Image img;
  int channels = 0;
  unsigned char* data = stbi_load(path.c_str(), &img.w, &img.h, &channels, 4);
  if (!data) return img;
  img.px.resize(static_cast<size_t>(img.w) * img.h);
  for (size_t i = 0; i < img.px.size(); ++i)
    img.px[i] = data[4 * i] | (data[4 * i + 1] << 8) | (data[4 * i + 2] << 16) | (0xFFu << 24);
  stbi_image_free(data);
  return img;
}

TEST(StudioScreenshot, TimelineOfARealTrace) {
  if (!have_xvfb()) GTEST_SKIP() << "xvfb-run is not installed (apt-get install xvfb xauth)";
  TempPath trace("studio_shot.db");
  TempPath png("studio_shot.png");
  const int64_t run = mpk::testing::store_tiny(trace.str(), 4);
  // Step 1 fills the window: tasks are wide enough to be drawn one by one.
  const TraceReader reader(trace.str());
  const StepRecord st = reader.steps(run)[1];
  std::string err;
  const int rc = run_studio("--screenshot " + png.str() + " --size 1280x800 --window " +
                                std::to_string(st.start_ns) + "ns:" + std::to_string(st.end_ns) + "ns " +
                                trace.str(),
                            &err);
  ASSERT_EQ(rc, 0) << err;
  const Image img = load_png(png.str());
  ASSERT_EQ(img.w, 1280);
  ASSERT_EQ(img.h, 800);
  std::set<uint32_t> colours(img.px.begin(), img.px.end());
  EXPECT_GT(colours.size(), 30u);  // not blank
  // The rows (below the toolbar, legend and ruler; above the status line) show the
  // kinds' own colours: linear everywhere, and the layer's other kinds.
  std::set<OpKind> seen;
  for (int y = img.h / 4; y < img.h - 40; ++y)
    for (int x = 80; x < img.w - 20; ++x)
      for (int k = 0; k < kNumOpKinds; ++k)
        if (img.at(x, y) == kind_color(static_cast<OpKind>(k))) seen.insert(static_cast<OpKind>(k));
  EXPECT_TRUE(seen.count(OpKind::kLinear));
  EXPECT_TRUE(seen.count(OpKind::kAttention));
  EXPECT_TRUE(seen.count(OpKind::kRmsNorm));
  EXPECT_GE(seen.size(), 5u);
}

// The Fit view of a 24-step GPU-shaped run on 16 workers (linear groups, merged small
// tasks): per worker row, the pixels of the boxes' height from the run's start to its end
// are busy when they have a kind's colour (as drawn whole, merged or outlined) and idle
// otherwise. The idle share of those pixels is the run's idle share over the same time
// within 5 points. Columns under a step boundary's line (drawn across the rows) are left
// out of both. The rows' geometry comes from the same frame drawn headless at the same size.
TEST(StudioScreenshot, FitViewShowsTheIdleShare) {
  if (!have_xvfb()) GTEST_SKIP() << "xvfb-run is not installed (apt-get install xvfb xauth)";
  TempPath trace("studio_idle_share.db");
  TempPath png("studio_idle_share.png");
  const int64_t run = mpk::testing::store_gpu_like_tiny(trace.str(), 24, 16);
  std::string err;
  ASSERT_EQ(run_studio("--screenshot " + png.str() + " --size 1280x800 " + trace.str(), &err), 0) << err;
  const Image img = load_png(png.str());
  ASSERT_EQ(img.w, 1280);

  StudioState s;
  ASSERT_TRUE(open_trace(s, trace.str(), run)) << s.status;
  HeadlessFrame h(1280, 800);
  h.run([&] { draw_app_frame(s); }, 4);
  const TimelineState& tl = s.timeline;
  ASSERT_GT(tl.merged_boxes, 0);  // the view merges small tasks: what the test is about
  const TraceModel& m = *s.model;
  const double run_ns = static_cast<double>(m.duration_ns());
  const auto x_of = [&](double t) { return tl.canvas_x0 + (t - s.window.t0_ns) / s.window.span() * tl.canvas_width; };
  const auto t_of = [&](double x) { return s.window.t0_ns + (x - tl.canvas_x0) / tl.canvas_width * s.window.span(); };
  std::set<uint32_t> busy_colours;
  for (int k = 0; k < kNumOpKinds; ++k)
    for (float f : {1.0f, 0.85f, 0.55f, 0.4f}) busy_colours.insert(darken(kind_color(static_cast<OpKind>(k)), f));
  // Columns crossed by a step boundary's line are left out (the line covers the boxes).
  std::set<int> step_columns;
  for (const StepRecord& st : m.steps())
    for (int dx = -1; dx <= 1; ++dx) step_columns.insert(static_cast<int>(std::floor(x_of(static_cast<double>(st.end_ns)))) + dx);
  int64_t busy = 0, idle = 0;
  const int x0 = static_cast<int>(std::ceil(x_of(0))), x1 = static_cast<int>(std::floor(x_of(run_ns)));
  const int pad = tl.row_height >= 12 ? 2 : 1;
  for (int32_t w = 0; w < m.num_workers(); ++w) {
    const float top = tl.row_y[static_cast<size_t>(w)];
    ASSERT_GE(top, 0) << "worker " << w << "'s row is not on screen";
    for (int y = static_cast<int>(std::round(top)) + pad; y < static_cast<int>(std::round(top + tl.row_height)) - pad; ++y)
      for (int x = x0; x < x1; ++x) {
        if (step_columns.count(x)) continue;
        (busy_colours.count(img.at(x, y)) ? busy : idle)++;
      }
  }
  // The run's idle share over the same pixel columns (the times they stand for).
  double busy_ns = 0, all_ns = 0;
  for (int x = x0; x < x1; ++x) {
    if (step_columns.count(x)) continue;
    const double ta = t_of(x), tb = t_of(x + 1);
    for (int32_t w = 0; w < m.num_workers(); ++w) busy_ns += m.busy_before(w, tb) - m.busy_before(w, ta);
    all_ns += (tb - ta) * m.num_workers();
  }
  EXPECT_LT(static_cast<double>(step_columns.size()), 0.1 * (x1 - x0));
  const double trace_idle = 1.0 - busy_ns / all_ns;
  const double pixel_idle = static_cast<double>(idle) / static_cast<double>(busy + idle);
  EXPECT_GT(trace_idle, 0.1);
  EXPECT_NEAR(pixel_idle, trace_idle, 0.05) << busy << " busy and " << idle << " idle pixels";
}

// A 2-rank CPU launch of tiny opened on rank 0: every row of rank 1 (under rank 0's, where
// the same frame drawn headless at the same size puts them) has pixels of the kinds' colours.
TEST(StudioScreenshot, EveryRankOfATensorParallelLaunch) {
  if (!have_xvfb()) GTEST_SKIP() << "xvfb-run is not installed (apt-get install xvfb xauth)";
  TempPath trace("studio_shot_ranks.db");
  TempPath png("studio_shot_ranks.png");
  const int64_t run = mpk::testing::store_tiny_tp2(trace.str());
  std::string err;
  ASSERT_EQ(run_studio("--screenshot " + png.str() + " --size 1280x800 --run " + std::to_string(run) + " " + trace.str(), &err),
            0)
      << err;
  const Image img = load_png(png.str());
  ASSERT_EQ(img.w, 1280);
  ASSERT_EQ(img.h, 800);

  StudioState s;
  ASSERT_TRUE(open_trace(s, trace.str(), run)) << s.status;
  HeadlessFrame h(1280, 800);
  h.run([&] { draw_app_frame(s); }, 4);
  const TimelineState& tl = s.timeline;
  ASSERT_EQ(tl.rank_row_y.size(), 1u);
  std::set<uint32_t> busy_colours;
  for (int k = 0; k < kNumOpKinds; ++k)
    for (float f : {1.0f, 0.85f, 0.55f, 0.4f}) busy_colours.insert(darken(kind_color(static_cast<OpKind>(k)), f));
  const int x0 = static_cast<int>(std::ceil(tl.canvas_x0)), x1 = static_cast<int>(std::floor(tl.canvas_x0 + tl.canvas_width));
  for (size_t w = 0; w < tl.rank_row_y[0].size(); ++w) {
    const float top = tl.rank_row_y[0][w];
    ASSERT_GE(top, 0) << "rank 1's worker " << w << " is not on screen";
    int64_t busy = 0;
    for (int y = static_cast<int>(std::round(top)) + 1; y < static_cast<int>(std::round(top + tl.row_height)) - 1; ++y)
      for (int x = x0; x < x1; ++x) busy += busy_colours.count(img.at(x, y));
    EXPECT_GT(busy, 0) << "rank 1's worker " << w << " shows no task";
  }
}

TEST(StudioScreenshot, BadInputExitsNonZeroWithAMessage) {
  if (!have_xvfb()) GTEST_SKIP() << "xvfb-run is not installed (apt-get install xvfb xauth)";
  TempPath png("studio_bad.png");
  std::string err;
  EXPECT_NE(run_studio("--screenshot " + png.str() + " /nonexistent/trace.db", &err), 0);
  EXPECT_NE(err.find("/nonexistent/trace.db: no such file"), std::string::npos) << err;
  TempPath junk("studio_junk.db");
  std::ofstream(junk.str()) << "not a database";
  EXPECT_NE(run_studio("--screenshot " + png.str() + " " + junk.str(), &err), 0);
  EXPECT_NE(err.find(junk.str()), std::string::npos) << err;
  EXPECT_NE(run_studio("--screenshot " + png.str() + " --view flame " + junk.str(), &err), 0);
  EXPECT_NE(err.find("unknown view 'flame'"), std::string::npos) << err;
}

}  // namespace
}  // namespace mpk::studio
