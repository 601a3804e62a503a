// `mpk-studio --screenshot` under Xvfb: renders a real trace into a PNG, which is read
// back (stb_image) and checked: the requested size, not blank, and the timeline's rows
// show the operator kinds' colours. Bad input exits non-zero with a message. Skips,
// saying so, where xvfb-run is not installed.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "stb_image.h"
#include "studio/colors.h"
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
