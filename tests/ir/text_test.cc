// Tests of the canonical text form (ir/text.h): the exact lines printed, lossless
// round trips (print(parse(print(m))) == print(m), and field by field), quoting of
// unusual names, leniency about comments and spacing, and parse errors that point at
// "<source>:<line>:<col>".
#include <gtest/gtest.h>

#include <sstream>

#include "ir/text.h"
#include "ir/verifier.h"
#include "tests/ir/test_modules.h"

namespace mpk {
namespace {

using testing::expect_modules_equal;
using testing::tiny_module;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

bool has_line(const std::string& text, const std::string& line) {
  for (const std::string& l : lines_of(text))
    if (l == line) return true;
  return false;
}

TEST(TextForm, PrintsCanonicalLines) {
  const std::string text = print_module(tiny_module());
  const auto lines = lines_of(text);
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines[0], "mpk.module \"toy \\\"one\\\" layer\" ir_version=1");
  EXPECT_EQ(lines[1].rfind("attrs {architecture=\"qwen3\", batch=1, big=1.0000000000000001e+300, ", 0),
            0u)
      << lines[1];
  for (const char* expected : {
           "provenance source=\"preset:toy\" pipeline=\"decompose,infer-deps\" tool=\"mpk test\"",
           "machine name=\"toy GPU\" sm_count=4 smem_per_sm=232448 mem_bandwidth=3350000000000.0 "
           "clock_ghz=1.7549999999999999 event_latency_ns=1000.0 task_overhead_ns=500.0",
           "tensor tokens : i32[1] input",
           "tensor model.embed_tokens.weight : bf16[32, 8] weight",
           "tensor k_cache.0 : bf16[1, 4, 1, 4] kv_cache",
           "tensor logits : f32[1, 32] output",
           "op embed = embedding(model.embed_tokens.weight, tokens) -> (h.0) layer=-1 {}",
           "op L0.input_norm = rms_norm(h.0, model.layers.0.input_layernorm.weight) -> (xn.0) "
           "layer=0 {eps=9.9999999999999995e-07}",
           "op L0.kv_append = kv_append(kr.0, v.0) -> (k_cache.0, v_cache.0) layer=0 {}",
           "task 0 = embed:embedding reads(model.embed_tokens.weight[0:32, 0:8], tokens[0:1]) "
           "writes(h.0[0:1, 0:8]) bytes=100 flops=0 {}",
           "task 2 = L0.q_proj:linear reads(xn.0[0:1, 0:8], "
           "model.layers.0.self_attn.q_proj.weight[0:8, 0:8]) writes(q.0[0:1, 0:8]) bytes=102 "
           "flops=2000 {note=\"x\", tile=8, w=0.25}",
           "event 0 target=1 distance=0 producers(0) consumers(1)",
           "event 11 target=2 distance=0 producers(0, 11) consumers(12)",
           "event 22 target=1 distance=1 producers(22) consumers(0)",
           "schedule \"round-robin\" {mode=\"toy\", seed=7, weight=0.5}",
           "worker 0: 0 2 4 6 8 10 12 14 16 18 20 22",
           "worker 1: 1 3 5 7 9 11 13 15 17 19 21",
       })
    EXPECT_TRUE(has_line(text, expected)) << "missing line: " << expected << "\nin:\n" << text;
}

TEST(TextForm, FloatAttrsPrintExactly) {
  const std::string text = print_module(tiny_module());
  for (const char* piece : {"neg=-2.5", "neg_inf=-inf", "neg_zero=-0.0", "not_a_number=nan",
                            "pos_inf=inf", "tiny=4.9406564584124654e-324",
                            "int_min=-9223372036854775808",
                            "text=\"a \\\"quoted\\\" back\\\\slash\nnewline\""})
    EXPECT_NE(text.find(piece), std::string::npos) << piece;
}

TEST(TextForm, RoundTripIsLossless) {
  const Module m = tiny_module();
  const std::string text = print_module(m);
  const Module back = parse_module(text, "tiny.txt");
  EXPECT_EQ(print_module(back), text);
  expect_modules_equal(m, back);
  EXPECT_TRUE(verify_module(back).empty());
}

TEST(TextForm, UnusualNamesAreQuotedAndRoundTrip) {
  Module m = tiny_module();
  m.program.tensors[0].name = "tokens [weird], \"name\"";
  m.program.tensors[1].name = "";
  m.program.ops[0].name = "7embed";
  m.graph.schedule.policy = "";
  m.graph.schedule.workers.push_back({});
  const TensorId scalar =
      m.program.add_tensor(Tensor{"scalar", DType::kF32, {}, TensorRole::kScratch});
  m.graph.tasks[3].reads.push_back(full_region(scalar, {}));
  m.program.rebuild_use_lists();
  const std::string text = print_module(m);
  EXPECT_TRUE(has_line(text, "tensor scalar : f32[] scratch")) << text;
  EXPECT_NE(text.find("scalar[]) writes("), std::string::npos) << text;
  EXPECT_TRUE(has_line(text, "tensor \"tokens [weird], \\\"name\\\"\" : i32[1] input")) << text;
  EXPECT_TRUE(has_line(text, "tensor \"\" : bf16[32, 8] weight")) << text;
  EXPECT_TRUE(has_line(text, "op \"7embed\" = embedding(\"\", \"tokens [weird], \\\"name\\\"\") -> "
                             "(h.0) layer=-1 {}"))
      << text;
  EXPECT_TRUE(has_line(text, "worker 2:")) << text;
  const Module back = parse_module(text, "names.txt");
  EXPECT_EQ(print_module(back), text);
  expect_modules_equal(m, back);
}

TEST(TextForm, ScheduleLineOnlyWhenScheduled) {
  Module m = tiny_module();
  m.graph.schedule = Schedule{};
  std::string text = print_module(m);
  EXPECT_EQ(text.find("schedule"), std::string::npos);
  EXPECT_EQ(text.find("worker"), std::string::npos);
  expect_modules_equal(m, parse_module(text, "unscheduled.txt"));

  m.graph.schedule.policy = "pending";
  text = print_module(m);
  EXPECT_TRUE(has_line(text, "schedule \"pending\" {}"));
  expect_modules_equal(m, parse_module(text, "pending.txt"));
}

TEST(TextForm, PrintOptionsLeaveOutToolVersionAndMachineDefaults) {
  Module m = tiny_module();  // machine: name, sm_count, clock_ghz and mem_bandwidth set
  const PrintOptions brief{.tool_version = false, .machine_defaults = false};
  std::string text = print_module(m, brief);
  EXPECT_TRUE(has_line(text, "provenance source=\"preset:toy\" pipeline=\"decompose,infer-deps\"")) << text;
  EXPECT_TRUE(has_line(text, "machine name=\"toy GPU\" sm_count=4 mem_bandwidth=3350000000000.0 "
                               "clock_ghz=1.7549999999999999"))
      << text;
  // Parsed back: the same module but for the tool version; printed again, the same text.
  Module back = parse_module(text, "brief.txt");
  EXPECT_EQ(back.provenance.tool_version, "");
  EXPECT_EQ(print_module(back, brief), text);
  back.provenance.tool_version = m.provenance.tool_version;
  expect_modules_equal(m, back);

  m.machine = MachineModel{};  // all defaults: no machine line at all
  text = print_module(m, brief);
  EXPECT_EQ(text.find("\nmachine"), std::string::npos) << text;
  expect_modules_equal(m, [&] {
    Module b = parse_module(text, "defaults.txt");
    b.provenance.tool_version = m.provenance.tool_version;
    return b;
  }());
  // The default options print every field.
  EXPECT_TRUE(has_line(print_module(m), "machine name=\"H100-SXM\" sm_count=132 smem_per_sm=232448 "
                                        "mem_bandwidth=3000000000000.0 clock_ghz=1.98 "
                                        "event_latency_ns=1000.0 task_overhead_ns=500.0"));
}

TEST(TextForm, ParsesCommentsBlankLinesAndLooseSpacing) {
  const std::string text =
      "# a module written by hand\n"
      "\n"
      "mpk.module   m   ir_version = 1   # trailing comment\n"
      "tensor x:bf16[1,4] weight\n"
      "\t tensor y : bf16 [ 1 , 4 ] activation\n"
      "\n"
      "op add = residual_add( x , x )->( y ) layer = -1 { }\n"
      "task 0 = add : residual_add reads( x[ 0 : 1 , 0 : 4 ] ) writes(y[0:1,0:4]) bytes=16 "
      "flops=4 {k = 1.5e3}\n"
      "machine sm_count=8 event_latency_ns=250\n";
  const Module m = parse_module(text, "loose.txt");
  EXPECT_EQ(m.name, "m");
  ASSERT_EQ(m.program.tensors.size(), 2u);
  EXPECT_EQ(m.program.tensors[1].shape, (std::vector<int64_t>{1, 4}));
  ASSERT_EQ(m.graph.tasks.size(), 1u);
  EXPECT_EQ(m.graph.tasks[0].writes[0], (Region{1, {{0, 1}, {0, 4}}}));
  EXPECT_EQ(std::get<double>(m.graph.tasks[0].attrs.at("k")), 1500.0);
  EXPECT_EQ(m.machine.sm_count, 8);
  EXPECT_EQ(m.machine.event_latency_ns, 250.0);
  EXPECT_EQ(m.machine.name, MachineModel{}.name);  // keys left out keep their defaults
  EXPECT_TRUE(verify_module(m).empty());
  const std::string canonical = print_module(m);
  EXPECT_EQ(print_module(parse_module(canonical, "canonical.txt")), canonical);
}

// A small valid module, one construct per line, for the error tests.
const std::vector<std::string> kBase = {
    "mpk.module \"m\" ir_version=1",
    "tensor x : bf16[1, 4] activation",
    "tensor y : bf16[1, 4] activation",
    "op add = residual_add(x, x) -> (y) layer=-1 {}",
    "task 0 = add:residual_add reads(x[0:1, 0:4]) writes(y[0:1, 0:4]) bytes=16 flops=4 {}",
};

std::string join(const std::vector<std::string>& lines) {
  std::string s;
  for (const std::string& l : lines) s += l + "\n";
  return s;
}

struct ParseErrorCase {
  int line;                // 1-based line to replace (0: append a line)
  std::string text;        // the new line
  std::string at;          // the error's column: where this first occurs in the line,
  std::string what;        // the message after "<source>:<line>:<col>: "
  size_t skip = 0;         // plus this many characters
};

TEST(TextForm, BaseParses) { EXPECT_NO_THROW(parse_module(join(kBase), "t.txt")); }

TEST(TextForm, ParseErrorsPointAtLineAndColumn) {
  const std::vector<ParseErrorCase> cases = {
      {4, "op add = residual_add(x, z) -> (y) layer=-1 {}", "z)", "unknown tensor 'z'"},
      {5, "task 0 = add:residual_add reads(w[0:1, 0:4]) writes(y[0:1, 0:4]) bytes=16 flops=4 {}",
       "w[", "unknown tensor 'w'"},
      {5, "task 0 = add:residual_add reads(x[0:1; 0:4]) writes(y[0:1, 0:4]) bytes=16 flops=4 {}",
       ";", "expected ']', got ';'"},
      {5, "task 0 = add:residual_add reads(x[0-1, 0:4]) writes(y[0:1, 0:4]) bytes=16 flops=4 {}",
       "-1,", "expected ':', got '-'"},
      {5, "task 0 = add:residual_add reads(x[a:1, 0:4]) writes(y[0:1, 0:4]) bytes=16 flops=4 {}",
       "a:1", "expected an integer range start"},
      {2, "tensor x : bf17[1, 4] activation", "bf17",
       "unknown dtype 'bf17' (expected bf16, f16, f32 or i32)"},
      {2, "tensor x : bf16[1, 4] activ", "activ",
       "unknown tensor role 'activ' (expected weight, activation, kv_cache, input, output or "
       "scratch)"},
      {2, "tensor x : bf16[99999999999999999999, 4] activation", "999",
       "expected an integer dimension"},
      {4, "op add = residual_sub(x, x) -> (y) layer=-1 {}", "residual_sub",
       "unknown operator kind 'residual_sub'"},
      {5, "task 0 = add:residual reads(x[0:1, 0:4]) writes(y[0:1, 0:4]) bytes=16 flops=4 {}",
       "residual", "unknown task kind 'residual'"},
      {5, "task 0 = sub:residual_add reads(x[0:1, 0:4]) writes(y[0:1, 0:4]) bytes=16 flops=4 {}",
       "sub", "unknown operator 'sub'"},
      {3, "tensor x : bf16[1, 4] activation", "x", "duplicate tensor name 'x'"},
      {0, "op add = residual_add(x, x) -> (y) layer=-1 {}", "add", "duplicate operator name 'add'"},
      {5, "task 1 = add:residual_add reads(x[0:1, 0:4]) writes(y[0:1, 0:4]) bytes=16 flops=4 {}",
       "task 1", "task ids must be consecutive from 0: expected 0, got 1", 5},
      {1, "mpk.module \"m\" ir_version=2", "=2",
       "written by a newer mpk: IR version 2, this build reads up to 1", 1},
      {1, "tensor z : bf16[1] activation", "tensor",
       "expected the header line 'mpk.module \"<name>\" ir_version=N'"},
      {2, "tensr x : bf16[1, 4] activation", "tensr",
       "unknown line keyword 'tensr' (expected attrs, provenance, machine, tensor, op, task, "
       "event, schedule or worker)"},
      {4, "op add = residual_add(x, x) -> (y) layer=-1 {eps=1.2.3}", "1.2.3",
       "malformed number '1.2.3'"},
      {4, "op add = residual_add(x, x) -> (y) layer=-1 {a=1, a=2}", "a=2", "duplicate attribute 'a'"},
      {4, "op add = residual_add(x, x) -> (y) layer=-1 {a=1 b=2}", "b=2", "expected '}', got 'b'"},
      {4, "op add = residual_add(x, x) -> (y) layer=99999999999 {}", "999",
       "layer 99999999999 does not fit in 32 bits"},
      {0, "machine cores=4", "cores",
       "unknown key 'cores' in machine (known: name, sm_count, smem_per_sm, mem_bandwidth, "
       "clock_ghz, event_latency_ns, task_overhead_ns)"},
      {0, "machine sm_count=4.5", "4.5", "machine sm_count must be an integer"},
      {0, "worker 0: 0", "worker", "'worker' line before the 'schedule' line"},
      {5, "task 0 = add:residual_add reads(x[0:1, 0:4]) writes(y[0:1, 0:4]) bytes=16 flops=4 {} x",
       "{} x", "unexpected 'x', expected end of line", 3},
      {0, "event 0 target=1 distance=0 producers(0 consumers(0)", "consumers",
       "expected ')', got 'c'"},
  };
  for (const ParseErrorCase& c : cases) {
    std::vector<std::string> lines = kBase;
    int line = c.line;
    if (line == 0) {
      lines.push_back(c.text);
      line = static_cast<int>(lines.size());
    } else {
      lines[line - 1] = c.text;
    }
    const size_t at = c.text.find(c.at);
    ASSERT_NE(at, std::string::npos) << c.text;
    const std::string expected =
        "t.txt:" + std::to_string(line) + ":" + std::to_string(at + c.skip + 1) + ": " + c.what;
    try {
      parse_module(join(lines), "t.txt");
      ADD_FAILURE() << "accepted: " << c.text;
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()), expected) << c.text;
    }
  }
}

TEST(TextForm, UnterminatedStringAndEmptyInput) {
  try {
    parse_module("mpk.module \"m ir_version=1\ntensor x : bf16[1] activation\n", "u.txt");
    ADD_FAILURE() << "accepted an unterminated string";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "u.txt:3:1: unterminated string");
  }
  try {
    parse_module("  \n# only a comment\n", "e.txt");
    ADD_FAILURE() << "accepted empty input";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("e.txt:3:1: empty input", 0), 0u) << e.what();
  }
}

TEST(TextForm, ParsedIdsAreLeftToTheVerifier) {
  std::vector<std::string> lines = kBase;
  lines.push_back("event 0 target=1 distance=0 producers(0) consumers(7)");
  const Module m = parse_module(join(lines), "ids.txt");
  const std::vector<Diagnostic> d = verify_module(m);
  ASSERT_FALSE(d.empty());
  EXPECT_EQ(d[0].rule, "structure.bad-id");
  EXPECT_NE(print_module(m).find("consumers(7)"), std::string::npos);
}

}  // namespace
}  // namespace mpk
