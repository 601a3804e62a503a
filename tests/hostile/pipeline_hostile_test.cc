// Hostile pass pipelines given to mpk-opt: option values that are not finite numbers, or that
// lie outside their declared bounds, are refused naming the pass and the option.
#include "tests/hostile/hostile_fixture.h"

namespace mpk::hostile {
namespace {

TEST_F(HostileTest, NanEventLatencyIsRefused) {
  expect_refused(run("mpk-opt", "tiny -o - --pass-pipeline='decompose,infer-deps,"
                                "assign-sm{policy=critical-path,event-latency-ns=nan}'"),
                 "pass 'assign-sm': option 'event-latency-ns' expects a finite number, got 'nan'");
}

TEST_F(HostileTest, InfiniteSlackScaleIsRefused) {
  expect_refused(run("mpk-opt", "tiny -o - --pass-pipeline='decompose,infer-deps,"
                                "assign-sm{policy=locality,slack-scale=inf}'"),
                 "pass 'assign-sm': option 'slack-scale' expects a finite number, got 'inf'");
}

TEST_F(HostileTest, EventLatencyAboveItsBoundIsRefused) {
  expect_refused(run("mpk-opt", "tiny -o - --pass-pipeline='decompose,infer-deps,"
                                "assign-sm{policy=critical-path,event-latency-ns=1e300}'"),
                 "option 'event-latency-ns' must be between 0 and 1e+09, got 1e300");
}

TEST_F(HostileTest, UnknownChoiceIsRefusedNotTakenForTheDefault) {
  expect_refused(run("mpk-opt", "tiny -o - --pass-pipeline='decompose{coop=sometimes},infer-deps,assign-sm'"),
                 "pass 'decompose': option 'coop' expects one of auto, on, off, got 'sometimes'");
}

}  // namespace
}  // namespace mpk::hostile
