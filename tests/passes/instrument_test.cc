// Tests of pass instruments (passes/instrument.h): a tool's instrument sees every pass
// before and after it runs, in pipeline order and nested inside the built-in ones, and
// an instrument's error stops the pipeline naming the pass.
#include <gtest/gtest.h>

#include "ir/error.h"
#include "ir/import/import.h"
#include "passes/pass_manager.h"

namespace mpk {
namespace {

class Recorder : public PassInstrument {
 public:
  explicit Recorder(std::vector<std::string>& log) : log_(log) {}
  void before_pass(const std::string& pass, const Module& m) override {
    log_.push_back("before " + pass + " tasks=" + std::to_string(m.graph.tasks.size()));
  }
  void after_pass(const std::string& pass, const Module& m, const PassResult& r) override {
    log_.push_back("after " + pass + " tasks=" + std::to_string(m.graph.tasks.size()) +
                   (r.changed ? " changed" : ""));
  }

 private:
  std::vector<std::string>& log_;
};

class Refuser : public PassInstrument {
 public:
  void after_pass(const std::string& pass, const Module&, const PassResult&) override {
    if (pass == "infer-deps") throw Error("no events wanted");
  }
};

TEST(PassInstrument, SeesEveryPassInOrder) {
  Module m = import_model("tiny", ImportOptions{});
  PassManager pm(parse_pipeline("decompose,infer-deps"));
  std::vector<std::string> log;
  pm.add_instrument(std::make_unique<Recorder>(log));
  pm.run(m);
  const std::string tasks = std::to_string(m.graph.tasks.size());
  ASSERT_GT(m.graph.tasks.size(), 0u);
  EXPECT_EQ(log, (std::vector<std::string>{"before decompose tasks=0",
                                           "after decompose tasks=" + tasks + " changed",
                                           "before infer-deps tasks=" + tasks,
                                           "after infer-deps tasks=" + tasks + " changed"}));
  EXPECT_EQ(pm.timings().size(), 2u);
}

TEST(PassInstrument, ItsErrorStopsThePipeline) {
  Module m = import_model("tiny", ImportOptions{});
  PassManager pm(parse_pipeline("decompose,infer-deps,assign-sm"));
  pm.add_instrument(std::make_unique<Refuser>());
  try {
    pm.run(m);
    FAIL() << "ran on";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "no events wanted");
  }
  EXPECT_TRUE(m.graph.schedule.workers.empty());
}

}  // namespace
}  // namespace mpk
