// Shared by the frame tests that drive the whole app headless (pipeline_panel,
// timeline_edit): a simulated tiny run on 4 round-robin workers opened in a StudioState,
// a HeadlessFrame drawing app frames, and helpers to wait for background jobs and press
// keys with modifiers.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <string>
#include <thread>

#include "tests/studio/optimizer_test_util.h"
#include "studio/ui/app.h"
#include "studio/ui/headless_frame.h"
#include "studio/ui/panels.h"

namespace mpk::studio::testing {

inline constexpr const char* kRoundRobin4 = "decompose,infer-deps,assign-sm{policy=round-robin,workers=4}";

class AppOnTinyRun : public OptimizerTest {
 protected:
  void SetUp() override {
    OptimizerTest::SetUp();
    trace_ = path("trace.db");
    const CommandResult r = run_tool("mpk", "run --backend sim --model tiny --steps 2 --pipeline '" +
                                                std::string(kRoundRobin4) + "' --trace '" + trace_ + "'");
    ASSERT_EQ(r.status, 0) << r.err;
    ASSERT_TRUE(open_trace(s_, trace_)) << s_.status;
    first_ = s_.run;
    frame_ = [this] { draw_app_frame(s_); };
  }

  // Frames until `done` holds (bounded, so that a failure cannot hang).
  template <typename Pred>
  void run_until(Pred done) {
    for (int i = 0; i < 20000 && !done(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      h_.run(frame_);
    }
  }

  // Frames until no pipeline job or edit store is pending.
  void idle() {
    run_until([&] { return !s_.pipeline.runner.busy() && s_.pipeline.job == PipelineJob::kNone &&
                           !s_.pipeline.store_pending; });
    h_.run(frame_, 2);
  }

  void press(ImGuiKey key, bool ctrl, bool alt) {
    ImGui::SetCurrentContext(h_.context());
    ImGuiIO& io = ImGui::GetIO();
    io.KeyCtrl = ctrl;
    io.KeyAlt = alt;
    h_.press_key(frame_, key);
    io.KeyCtrl = io.KeyAlt = false;
    h_.run(frame_);
  }

  const ScheduleEditor& editor() const { return *s_.pipeline.editor; }

  std::string trace_;
  int64_t first_ = -1;
  StudioState s_;
  HeadlessFrame h_{1600, 1000};
  std::function<void()> frame_;
};

}  // namespace mpk::studio::testing
