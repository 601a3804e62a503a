// mpk tune's engine (driver/tune_space.h, driver/tune_search.h): the space comes from the
// options the passes and policies declare; candidates compile through shared stages to the
// same modules as a fresh compile; a small budget on the tiny preset finds a schedule at
// least as fast as an option known to beat the default, and the best is a valid module.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "driver/compile.h"
#include "driver/tune_search.h"
#include "driver_test_util.h"
#include "ir/serialize.h"
#include "ir/verifier.h"
#include "passes/policies/policy.h"
#include "passes/registry.h"
#include "traces/calibrate.h"
#include "traces/simulator.h"

namespace mpk {
namespace {

using testing::DriverTest;

Module imported(const std::string& model) {
  CompileRequest r;
  r.model = model;
  return import_source(r);
}

const TuneDimension* find_dim(const TuneSpace& s, const std::string& name, const std::string& policy = "") {
  for (const TuneDimension& d : s.dims)
    if (d.name() == name && d.policy == policy) return &d;
  return nullptr;
}

TEST_F(DriverTest, TuneSpaceComesFromTheDeclaredOptions) {
  TuneCompiler compiler(imported("tiny"));
  const TuneSpace space = build_tune_space(compiler, parse_pipeline(kDefaultPipeline));
  // Every option decompose declares is searched, or left at its default with a note.
  for (const PassOptionInfo& o : find_pass("decompose")->options) {
    const bool noted = std::any_of(space.notes.begin(), space.notes.end(), [&](const std::string& n) {
      return n.rfind("decompose." + o.name + ":", 0) == 0;
    });
    EXPECT_TRUE(find_dim(space, "decompose." + o.name) || noted) << o.name;
  }
  // Each fusion's presence; the policy over every policy without a base.
  for (const char* f : {"fuse-residual", "fuse-norm", "fuse-swiglu"}) EXPECT_TRUE(find_dim(space, f)) << f;
  const TuneDimension* policy = find_dim(space, "assign-sm.policy");
  ASSERT_TRUE(policy);
  for (const PolicyInfo& p : all_policies())
    EXPECT_EQ(std::count(policy->values.begin(), policy->values.end(), p.name), p.base_option.empty() ? 1 : 0);
  // A policy's option matters under that policy only; a computed latency is not searched.
  const TuneDimension* chain = find_dim(space, "assign-sm.chain-workers", "chain-aware");
  ASSERT_TRUE(chain);
  EXPECT_EQ(chain->values.front(), "auto");
  TunePoint p = default_point(space);
  const size_t ci = static_cast<size_t>(chain - space.dims.data());
  EXPECT_FALSE(dimension_active(space, p, ci));
  p[static_cast<size_t>(policy - space.dims.data())] =
      static_cast<int32_t>(std::find(policy->values.begin(), policy->values.end(), "chain-aware") - policy->values.begin());
  EXPECT_TRUE(dimension_active(space, p, ci));
  EXPECT_FALSE(find_dim(space, "assign-sm.event-latency-ns", "critical-path"));
  // Integer ladders keep only the values the pass takes within 4x the default's tasks.
  const TuneDimension* tile = find_dim(space, "decompose.tile");
  ASSERT_TRUE(tile);
  for (size_t i = tile->ladder_begin; i < tile->values.size(); ++i) {
    TunePoint q = default_point(space);
    q[static_cast<size_t>(tile - space.dims.data())] = static_cast<int32_t>(i);
    EXPECT_LE(compiler.decomposed_tasks(pipeline_of(space, q)), 4 * space.default_tasks) << tile->values[i];
  }
  EXPECT_EQ(describe_point(space, default_point(space)), "default");
}

TEST_F(DriverTest, TuneCandidatesCompileAsAFreshCompileWould) {
  TuneCompiler compiler(imported("tiny"));
  for (const char* text : {"fuse-residual,decompose{tile=16},infer-deps,assign-sm{policy=wave}",
                           "fuse-residual,decompose{tile=16},infer-deps,assign-sm{policy=pool}",
                           "fuse-norm,decompose,infer-deps,assign-sm{policy=zig-zag}"}) {
    const Module staged = compiler.schedule(parse_pipeline(text));
    Module fresh = imported("tiny");
    run_pipeline(fresh, text);
    EXPECT_EQ(module_to_binary(staged), module_to_binary(fresh)) << text;
  }
  compiler.set_task_limit(100);
  EXPECT_NE(testing::error_of([&] { compiler.schedule(parse_pipeline("decompose{tile=8},infer-deps,assign-sm")); })
                .find("more than the 100 a candidate may have"),
            std::string::npos);
}

TEST_F(DriverTest, TuneFindsAKnownBetterOptionAndWritesAValidModule) {
  // On tiny, elementwise tiles of 64 columns beat the default in the machine model.
  Module known = imported("tiny");
  run_pipeline(known, "fuse-residual,fuse-norm,fuse-rope,fuse-attention,fuse-swiglu,fuse-argmax,"
                      "decompose{elementwise-tile=64},infer-deps,assign-sm{policy=critical-path}");
  TuneSettings s;
  s.max_candidates = 40;
  s.search_steps = 4;
  s.final_steps = 8;
  s.costs = CostParams::from_machine(known.machine);
  const double known_ns = mean_step_ns(simulate(known, s.costs, s.final_steps), s.final_steps);

  TuneCompiler compiler(imported("tiny"));
  const TuneSpace space = build_tune_space(compiler, parse_pipeline(kDefaultPipeline));
  size_t calls = 0;
  const TuneResult r = run_tune(space, compiler, s, [&](const TuneResult&, const std::string&) { ++calls; });
  ASSERT_GE(r.candidates.size(), 2u);
  EXPECT_LE(r.candidates.size(), 40u);
  EXPECT_GE(calls, r.candidates.size());
  const double def = r.candidates[0].final_step_ns, best = r.candidates[r.best].final_step_ns;
  EXPECT_LT(known_ns, def);                   // the option is known to be better...
  EXPECT_LE(best, known_ns * 1.0005) << r.candidates[r.best].options;  // ...tune finds as good

  const std::string file = path("best.mpk");
  save_module(compiler.verified(parse_pipeline(r.candidates[r.best].pipeline)), file, Format::kBinary);
  const Module loaded = load_module(file);
  EXPECT_TRUE(verify_module(loaded).empty());
  EXPECT_EQ(mean_step_ns(simulate(loaded, s.costs, s.final_steps), s.final_steps), best);
}

}  // namespace
}  // namespace mpk
