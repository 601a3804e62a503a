// A real tensor-parallel launch for the studio's tests: the tiny preset compiled for 2
// ranks on 8 workers each (so that both ranks' rows fit on one screen), run on the CPU
// executor with record on (4 steps), stored by record_run as one run per rank (as
// tests/driver/record_ranks_test.cc does), and rank 1's clock offset set to a known value
// (the CPU's ranks share one clock, so the writer stores 0).
#pragma once

#include <memory>
#include <string>

#include "driver/compile.h"
#include "driver/executor.h"
#include "driver/record.h"
#include "tests/driver/driver_test_util.h"

namespace mpk::testing {

inline constexpr int64_t kRankOneOffsetNs = 7000;

// Returns rank 0's run id; rank 1's is the next one.
inline int64_t store_tiny_tp2(const std::string& path) {
  CompileRequest request;
  request.model = "tiny";
  request.tp = 2;
  request.policy = "critical-path,workers=8";
  const Compiled c = compile(request);
  ExecutorOptions o;
  o.threads = 2;
  const std::unique_ptr<Executor> cpu = make_executor("cpu", c.module, o);
  const int64_t id = record_run(path, c.module, *cpu, cpu->run({4, {1, 2}, true}), {"tiny", "", ""});
  sql(path, "UPDATE run SET rank_offset_ns = " + std::to_string(kRankOneOffsetNs) + " WHERE rank = 1");
  return id;
}

}  // namespace mpk::testing
