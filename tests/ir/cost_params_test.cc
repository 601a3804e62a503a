// Cost files and machine models are untrusted: values out of their bounds are refused with
// the file and the field named, endless files at a size limit, and a cost file is written
// whole or not at all.
#include "ir/cost_params.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include "ir/error.h"

namespace mpk {
namespace {

std::string parse_error(const std::string& json) {
  try {
    parse_cost_params(json, "c.json", CostParams::from_machine(MachineModel{}));
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(CostParams, ValuesOutOfBoundsAreRefusedNamingTheField) {
  EXPECT_EQ(parse_error("{\"mem_bandwidth\": 1e-300}"),
            "c.json: mem_bandwidth (bytes/s) must be in 1000..1e+15, got 1e-300");
  EXPECT_EQ(parse_error("{\"sm_bandwidth\": 1e30}"), "c.json: sm_bandwidth (bytes/s) must be in 1000..1e+15, got 1e+30");
  EXPECT_EQ(parse_error("{\"dispatch_ns\": 1e12}"), "c.json: dispatch_ns must be in 0..1e+09, got 1e+12");
  EXPECT_EQ(parse_error("{\"default\": {\"bytes_scale\": 1e9}}"),
            "c.json: default.bytes_scale must be in 0..1e+06, got 1e+09");
  EXPECT_EQ(parse_error("{\"kinds\": {\"attention\": {\"flops_per_ns\": 1e12}}}"),
            "c.json: kinds.attention.flops_per_ns must be in 0..1e+09, got 1e+12");
  EXPECT_EQ(parse_error("{\"mem_bandwidth\": 2e12}"), "");
  EXPECT_EQ(parse_error("{\"link_bandwidth\": -1}"), "c.json: link_bandwidth: expected a finite number >= 0");
  EXPECT_EQ(parse_error("{\"link_bandwidth\": 1e30}"),
            "c.json: link_bandwidth (bytes/s, 0: one GPU) must be in 0..1e+15, got 1e+30");
  EXPECT_EQ(parse_error("{\"link_latency_ns\": 1e12}"), "c.json: link_latency_ns must be in 0..1e+09, got 1e+12");
}

// The tensor-parallel links' parameters go through a cost file and back.
TEST(CostParams, LinkParametersRoundTrip) {
  const CostParams base = CostParams::from_machine(MachineModel{});
  EXPECT_GT(base.link_latency_ns, 0);
  EXPECT_GT(base.link_bandwidth, 0);
  const CostParams c =
      parse_cost_params("{\"link_latency_ns\": 1234, \"link_bandwidth\": 5e11}", "c.json", base);
  EXPECT_EQ(c.link_latency_ns, 1234);
  EXPECT_EQ(c.link_bandwidth, 5e11);
  const CostParams back = parse_cost_params(format_cost_params(c), "again.json", base);
  EXPECT_EQ(back.link_latency_ns, 1234);
  EXPECT_EQ(back.link_bandwidth, 5e11);
}

TEST(CostParams, MachineModelOutOfBoundsIsRefused) {
  const auto error = [](void (*edit)(MachineModel&)) -> std::string {
    MachineModel m;
    edit(m);
    try {
      CostParams::from_machine(m);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(error([](MachineModel& m) { m.mem_bandwidth = std::numeric_limits<double>::infinity(); }),
            "machine model 'H100-SXM': mem_bandwidth (bytes/s) must be in 1000..1e+15, got inf");
  EXPECT_EQ(error([](MachineModel& m) { m.sm_count = 2147483647; }),
            "machine model 'H100-SXM': sm_count must be in 1..4096, got 2147483647");
  EXPECT_EQ(error([](MachineModel& m) { m.task_overhead_ns = -1; }),
            "machine model 'H100-SXM': task_overhead_ns must be in 0..1e+09, got -1");
  EXPECT_EQ(error([](MachineModel&) {}), "");
}

TEST(CostParams, EndlessFileIsRefusedAtTheSizeLimit) {
  try {
    load_cost_params("/dev/zero", CostParams::from_machine(MachineModel{}));
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "cost file '/dev/zero' is larger than 1 MiB");
  }
}

TEST(CostParams, SavingNeverLeavesHalfAFileOrAnInvalidOne) {
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("mpk_costs_save_" + std::to_string(::getpid()) + ".json");
  std::ofstream(path) << "old";
  CostParams p = CostParams::from_machine(MachineModel{});
  p.event_latency_ns = std::nan("");
  EXPECT_THROW(save_cost_params(p, path.string()), Error);
  std::ifstream in(path);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "old");
  p.event_latency_ns = 800;
  save_cost_params(p, path.string());
  EXPECT_EQ(load_cost_params(path.string(), CostParams{}).event_latency_ns, 800);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace mpk
