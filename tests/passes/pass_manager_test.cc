// Tests of the pass manager: unknown passes and options are rejected naming the known
// ones, malformed option values name pass and option, verify-each reports the pass after
// which the IR broke, the IR can be printed after every pass, timings cover every pass,
// the pipeline is recorded in the provenance, and a pass that changes the graph makes
// older task-graph indexes stale.
#include <gtest/gtest.h>

#include <sstream>

#include "hand_module.h"
#include "ir/import/import.h"
#include "ir/task_graph_index.h"
#include "passes/pass_manager.h"
#include "passes/registry.h"

namespace mpk {
namespace {

using testing::HandModule;

std::string construct_error(const std::string& pipeline) {
  try {
    PassManager pm(parse_pipeline(pipeline));
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(PassManager, UnknownPassListsKnownPasses) {
  const std::string e = construct_error("decompose,infer-dep");
  EXPECT_NE(e.find("unknown pass 'infer-dep'"), std::string::npos) << e;
  for (const PassInfo& p : all_passes()) EXPECT_NE(e.find(p.name), std::string::npos) << e;
}

TEST(PassManager, UnknownOptionListsKnownOptions) {
  const std::string e = construct_error("infer-deps{prune=false}");
  EXPECT_NE(e.find("pass 'infer-deps': unknown option 'prune'"), std::string::npos) << e;
  EXPECT_NE(e.find("prune-cross-step"), std::string::npos) << e;
  const std::string a = construct_error("assign-sm{polcy=locality}");
  for (const char* known : {"policy", "workers", "event-latency-ns", "slack-scale"})
    EXPECT_NE(a.find(known), std::string::npos) << a;
}

TEST(PassManager, MalformedValueNamesPassAndOption) {
  const std::string e = construct_error("decompose,infer-deps{prune-cross-step=yes}");
  EXPECT_NE(e.find("pass 'infer-deps': option 'prune-cross-step'"), std::string::npos) << e;
  EXPECT_NE(construct_error("assign-sm{workers=many}").find("'workers'"), std::string::npos);
}

// Every value is checked against its declared kind and bounds before a pass sees it: a
// NaN or an infinity passes no bound, a choice must be one of its values.
TEST(PassManager, OptionValuesAreFiniteAndInTheirBounds) {
  for (const char* v : {"nan", "NaN", "-nan", "inf", "-inf", "infinity"})
    EXPECT_EQ(construct_error(std::string("assign-sm{policy=critical-path,event-latency-ns=") + v + "}"),
              std::string("pass 'assign-sm': option 'event-latency-ns' expects a finite number, got '") + v + "'")
        << v;
  EXPECT_EQ(construct_error("assign-sm{policy=locality,slack-scale=nan}"),
            "pass 'assign-sm': option 'slack-scale' expects a finite number, got 'nan'");
  EXPECT_EQ(construct_error("assign-sm{policy=critical-path,event-latency-ns=1e300}"),
            "pass 'assign-sm': option 'event-latency-ns' must be between 0 and 1e+09, got 1e300");
  EXPECT_EQ(construct_error("decompose{coop=sometimes}"),
            "pass 'decompose': option 'coop' expects one of auto, on, off, got 'sometimes'");
  EXPECT_EQ(construct_error("assign-sm{policy=critical-path,event-latency-ns=250.5}"), "");
}

// A task reads outside its tensor: infer-deps does not mind, the verifier does, and
// verify-each names the pass after which it noticed.
TEST(PassManager, VerifyEachCatchesBrokenIrAfterAPass) {
  HandModule h;
  const TensorId t = h.tensor("t");
  h.task({}, {h.cols(t, 0, 64)});
  h.task({h.cols(t, 0, 100)}, {});
  PassManagerConfig on;
  on.verify_each = true;
  try {
    PassManager(parse_pipeline("infer-deps"), on).run(h.m);
    FAIL() << "expected a verifier error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("after pass 'infer-deps'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("region-out-of-bounds"), std::string::npos) << msg;
  }
  PassManagerConfig off;
  off.verify_each = false;
  Module m = h.m;
  EXPECT_NO_THROW(PassManager(parse_pipeline("infer-deps"), off).run(m));
}

TEST(PassManager, PassFailureNamesThePass) {
  HandModule h;  // no tasks
  try {
    PassManager(parse_pipeline("infer-deps")).run(h.m);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("pass 'infer-deps' failed: "), std::string::npos);
  }
}

TEST(PassManager, TimingsIrDumpsAndProvenance) {
  Module m = import_model("tiny", ImportOptions{});
  std::ostringstream dump;
  PassManagerConfig config;
  config.verify_each = true;
  config.print_ir_after_each = &dump;
  PassManager pm(parse_pipeline("decompose,infer-deps,assign-sm{policy=round-robin}"), config);
  pm.run(m);
  ASSERT_EQ(pm.timings().size(), 3u);
  const char* names[] = {"decompose", "infer-deps", "assign-sm"};
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(pm.timings()[i].pass, names[i]);
    EXPECT_TRUE(pm.timings()[i].changed);
    EXPECT_GE(pm.timings()[i].seconds, 0);
    EXPECT_NE(dump.str().find(std::string("// ----- IR after ") + names[i]), std::string::npos);
  }
  std::ostringstream t;
  print_timings(t, pm.timings());
  EXPECT_NE(t.str().find("total"), std::string::npos);
  EXPECT_EQ(m.provenance.pipeline, "decompose,infer-deps,assign-sm{policy=round-robin}");
  EXPECT_EQ(m.provenance.tool_version, tool_version());

  // A second run appends, and the unchanged passes say so (and leave the graph's stamp:
  // an index of it stays current).
  const TaskGraphIndex index(m.graph);
  PassManager again(parse_pipeline("infer-deps"));
  again.run(m);
  EXPECT_FALSE(again.timings()[0].changed);
  EXPECT_NO_THROW(index.require_current());
  EXPECT_EQ(m.provenance.pipeline, "decompose,infer-deps,assign-sm{policy=round-robin},infer-deps");
}

// A pass that changes the graph makes every index built before it stale: using one
// throws instead of answering for the old graph.
TEST(PassManager, AChangedGraphMakesOlderIndexesStale) {
  Module m = import_model("tiny", ImportOptions{});
  PassManager(parse_pipeline("decompose,infer-deps")).run(m);
  const TaskGraphIndex index(m.graph);
  EXPECT_NO_THROW(index.waits(0));
  PassManager(parse_pipeline("assign-sm{policy=round-robin}")).run(m);
  EXPECT_THROW(index.waits(0), Error);
  EXPECT_THROW(index.worker_of(0), Error);
  EXPECT_EQ(TaskGraphIndex(m.graph).worker_of(0), 0);
}

}  // namespace
}  // namespace mpk
