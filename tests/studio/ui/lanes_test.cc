// The timeline's lanes: the busy-SM strip averages to the run's utilization and the
// bandwidth lane adds up to the bytes streamed in the window, zoomed out (from the coarse
// picture) and in (from the executions); a click on the strip moves the window there.
#include "studio/model/lanes.h"

#include <gtest/gtest.h>

#include "studio/ui/app.h"
#include "studio/ui/headless_frame.h"
#include "studio/model/navigation.h"
#include "tests/studio/studio_test_runs.h"

namespace mpk::studio {
namespace {

using mpk::testing::TempPath;

TEST(Lanes, TheStripIsTheUtilizationAndTheLaneTheBytes) {
  TempPath path("lanes_gpu_like.db");
  const int64_t run = mpk::testing::store_gpu_like_tiny(path.str(), 6, 16);
  const TraceReader reader(path.str());
  const TraceModel m(reader, run);
  const double d = static_cast<double>(m.duration_ns());
  double busy = 0;
  for (int32_t w = 0; w < m.num_workers(); ++w) busy += static_cast<double>(m.busy_ns(w, 0, m.duration_ns()));
  const std::vector<float> strip = busy_strip(m, 800);
  double mean = 0;
  for (float f : strip) mean += f / 800.0;
  EXPECT_NEAR(mean, busy / (d * m.num_workers()), 0.005);
  // The lane over a window: its columns add up to the bytes streamed in it.
  for (const double span : {d, d / 50, d / 2000}) {
    const TimeAxis axis(TimeWindow{0.4 * d, 0.4 * d + span}, 100, 1000);
    const std::vector<float> lane = bandwidth_lane(m, axis, 1000);
    double bytes = 0;
    for (float v : lane) bytes += v * axis.ns_per_px;
    const RangeSummary want = summarize_range(m, axis.t0_ns, axis.t1_ns());
    EXPECT_NEAR(bytes, want.bytes, 0.01 * want.bytes + 1) << span;
  }
  EXPECT_DOUBLE_EQ(bandwidth_floor(m), static_cast<double>(m.run().device.mem_bandwidth) * 1e-9);
  EXPECT_GT(bandwidth_floor(m), 1000);  // the H100 model: ~3 TB/s
}

TEST(Lanes, AClickOnTheStripMovesTheWindowThere) {
  TempPath path("lanes_click.db");
  const int64_t run = mpk::testing::store_gpu_like_tiny(path.str(), 6, 16);
  StudioState s;
  ASSERT_TRUE(open_trace(s, path.str(), run)) << s.status;
  HeadlessFrame h(1600, 1000);
  const auto frame = [&] { draw_app_frame(s); };
  const double d = static_cast<double>(s.model->duration_ns());
  s.window = {0, d / 10};
  h.run(frame, 3);
  const TimelineState& tl = s.timeline;
  ASSERT_GT(tl.strip_x1, tl.strip_x0);
  const float x = std::floor(tl.strip_x0 + 0.75f * (tl.strip_x1 - tl.strip_x0));
  h.click(frame, x, tl.strip_y);
  EXPECT_NEAR(0.5 * (s.window.t0_ns + s.window.t1_ns), (x - tl.strip_x0) / (tl.strip_x1 - tl.strip_x0) * d, d / 500);
  EXPECT_NEAR(s.window.span(), d / 10, 1e-6 * d);
}

}  // namespace
}  // namespace mpk::studio
