// End-to-end tests of `mpk import`, `mpk-opt` and `mpk opt`: they run the built binaries
// (MPK_BINARY_DIR/tools) on presets, .mpk files in both forms and config.json files,
// check what they write and print, and check that every kind of bad input gives one
// clear error line and exit status 1, never a crash.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "ir/serialize.h"
#include "ir/text.h"
#include "passes/pipeline.h"
#include "passes/policies/policy.h"
#include "tests/hostile/hostile_fixture.h"

namespace mpk {
namespace {

namespace fs = std::filesystem;

using Result = hostile::CliResult;

// The built-CLI fixture of the hostile-input tests (a temporary folder, run, path, write,
// read), with this suite's stricter failure check.
class CliPasses : public hostile::HostileTest {
 protected:
  // A failure: status 1, one line on stderr naming the problem, nothing on stdout.
  void expect_error(const Result& r, const std::string& phrase) const {
    EXPECT_EQ(r.status, 1) << r.err;
    EXPECT_NE(r.err.find(phrase), std::string::npos) << "stderr: " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find("error: "), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
};

TEST_F(CliPasses, ImportWritesBinaryAndText) {
  Result r = run("mpk", "import --model tiny-qwen3 --batch 2 --max-seq 64 -o '" + path("m.mpk") + "'");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("imported tiny-qwen3"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("batch 2, max_seq_len 64"), std::string::npos) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1);
  const Module m = load_module(path("m.mpk"));
  EXPECT_EQ(m.name, "tiny-qwen3");
  EXPECT_TRUE(m.graph.tasks.empty());

  r = run("mpk", "import --model tiny -o -");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.rfind("mpk.module \"tiny\"", 0), 0u);
  EXPECT_NE(r.err.find("imported tiny"), std::string::npos);
  EXPECT_EQ(print_module(parse_module(r.out, "stdout")), r.out);

  r = run("mpk", "import --model tiny --emit=text -o '" + path("m.mpkt") + "'");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(read(path("m.mpkt")).rfind("mpk.module", 0), 0u);
}

TEST_F(CliPasses, OptRunsTheDefaultPipelineOnAFile) {
  ASSERT_EQ(run("mpk", "import --model tiny -o '" + path("in.mpk") + "'").status, 0);
  const Result r = run("mpk-opt", "'" + path("in.mpk") + "' -o '" + path("out.mpk") + "'");
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* row : {"operators", "tasks", "events", "cross-step", "workers", "tasks/worker",
                          "critical path", "makespan", "bytes/step", "critical-path"})
    EXPECT_NE(r.out.find(row), std::string::npos) << row << "\n" << r.out;
  const Module m = load_module(path("out.mpk"));
  EXPECT_EQ(m.graph.schedule.policy, "critical-path");
  EXPECT_EQ(m.provenance.pipeline, mpk::kDefaultPipeline);
}

// A module compiled already (e.g. one mpk-studio saved): without --pass-pipeline its task
// graph is re-derived by the default pipeline's passes from decompose on, giving the
// tasks, events and schedule that compiling the model gives.
TEST_F(CliPasses, OptRecompilesADecomposedModuleFromDecompose) {
  ASSERT_EQ(run("mpk-opt", "tiny -o '" + path("once.mpk") + "'").status, 0);
  const Result r = run("mpk-opt", "'" + path("once.mpk") + "' -o '" + path("twice.mpk") + "'");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("| decompose,infer-deps,assign-sm{policy=critical-path}"), std::string::npos) << r.out;
  // Everything after the header (the provenance names the pipelines that ran).
  auto body = [](const Module& m) {
    const std::string text = print_module(m);
    return text.substr(text.find("\ntensor "));
  };
  EXPECT_EQ(body(load_module(path("twice.mpk"))), body(load_module(path("once.mpk"))));
}

TEST_F(CliPasses, OptImportsAPresetAndWritesTextToStdout) {
  const Result r = run("mpk-opt",
                       "tiny --pass-pipeline='decompose,infer-deps,assign-sm{policy=locality,workers=8}' "
                       "--emit=text");
  ASSERT_EQ(r.status, 0) << r.err;
  const Module m = parse_module(r.out, "stdout");
  EXPECT_EQ(m.graph.schedule.policy, "locality");
  EXPECT_EQ(m.graph.schedule.workers.size(), 8u);
  EXPECT_NE(r.err.find("tasks/worker"), std::string::npos) << r.err;  // summary on stderr
}

TEST_F(CliPasses, OptReadsTextModulesAndMpkOptEqualsMpkOpt) {
  ASSERT_EQ(run("mpk", "import --model tiny --emit=text -o '" + path("in.mpkt") + "'").status, 0);
  const std::string args = "'" + path("in.mpkt") + "' --pass-pipeline=decompose,infer-deps -o -";
  const Result a = run("mpk-opt", args);
  const Result b = run("mpk", "opt " + args);
  ASSERT_EQ(a.status, 0) << a.err;
  ASSERT_EQ(b.status, 0) << b.err;
  EXPECT_EQ(a.out, b.out);
  EXPECT_FALSE(parse_module(a.out, "stdout").graph.events.empty());
}

TEST_F(CliPasses, OptImportsAConfigJson) {
  const std::string config = write("config.json", R"({
    "model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 64,
    "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1,
    "head_dim": 32, "intermediate_size": 128, "vocab_size": 256, "rms_norm_eps": 1e-5,
    "rope_theta": 10000.0, "max_position_embeddings": 128, "tie_word_embeddings": true})");
  const Result r = run("mpk-opt", "'" + config + "' --max-seq 32");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("tasks"), std::string::npos) << r.out;
}

TEST_F(CliPasses, ListPassesTimingAndIrDumps) {
  Result r = run("mpk-opt", "--list-passes");
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* name : {"decompose", "infer-deps", "assign-sm", "prune-cross-step", "policy=",
                           "round-robin", "critical-path", "locality", "slack-scale"})
    EXPECT_NE(r.out.find(name), std::string::npos) << name;

  r = run("mpk-opt", "tiny --timing --print-ir-after-all");
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* pass : {"decompose", "infer-deps", "assign-sm"}) {
    EXPECT_NE(r.err.find(std::string("// ----- IR after ") + pass), std::string::npos) << pass;
    EXPECT_NE(r.err.find(std::string("  ") + pass + " "), std::string::npos) << pass;
  }
  EXPECT_NE(r.err.find("total"), std::string::npos);

  r = run("mpk-opt", "tiny --no-verify-each --pass-pipeline=decompose");
  EXPECT_EQ(r.status, 0) << r.err;
  r = run("mpk-opt", "--help");
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("usage: mpk-opt"), std::string::npos);
}

TEST_F(CliPasses, BadInputsGiveOneErrorLine) {
  ASSERT_EQ(run("mpk", "import --model tiny -o '" + path("good.mpk") + "'").status, 0);
  const std::string good = read(path("good.mpk"));
  const std::string truncated = write("truncated.mpk", good.substr(0, good.size() / 2));
  const std::string garbage = write("garbage.mpk", "\x08\x96\x01 this is not a module");
  const std::string empty = write("empty.mpk", "");
  const std::string bad_text = write("bad.mpkt", "mpk.module \"x\" ir_version=1\ntensor t : bf17[1] input\n");
  const std::string unverifiable = write(
      "unverifiable.mpkt",
      "mpk.module \"x\" ir_version=1\ntensor a : bf16[1, 4] input\ntensor b : bf16[1, 4] input\n"
      "tensor y : bf16[1, 4] activation\nop add = residual_add(a, b) -> (y) layer=-1 {}\n"
      "task 0 = add:residual_add reads(a[0:1, 0:9], b[0:1, 0:4]) writes(y[0:1, 0:4]) bytes=1 "
      "flops=1 {}\n");
  const std::string bad_json = write("bad/config.json", "");
  fs::create_directories(path("bad"));
  write("bad/config.json", "{\"model_type\": \"llama\", ");
  const std::string wrong_json = write("wrong.json", "{\"model_type\": \"gpt2\"}");

  expect_error(run("mpk-opt", "'" + path("missing.mpk") + "'"), "missing.mpk");
  expect_error(run("mpk-opt", "no-such-preset"), "no-such-preset");
  expect_error(run("mpk-opt", "'" + truncated + "'"), "truncated.mpk");
  expect_error(run("mpk-opt", "'" + garbage + "'"), "garbage.mpk");
  expect_error(run("mpk-opt", "'" + empty + "'"), "empty.mpk");
  expect_error(run("mpk-opt", "'" + bad_text + "'"), "bad.mpkt:2:");
  expect_error(run("mpk-opt", "'" + unverifiable + "'"), "region-out-of-bounds");
  expect_error(run("mpk-opt", "'" + path("bad") + "'"), "config.json");
  expect_error(run("mpk-opt", "'" + wrong_json + "'"), "wrong.json");
  expect_error(run("mpk-opt", "tiny --pass-pipeline=decompose,fuse"), "unknown pass 'fuse'");
  expect_error(run("mpk-opt", "tiny --pass-pipeline='decompose{tiles=8}'"),
               "unknown option 'tiles'");
  expect_error(run("mpk-opt", "tiny --pass-pipeline='assign-sm{policy=magic}'"),
               "option 'policy' expects one of " + known_policies() + ", got 'magic'");
  expect_error(run("mpk-opt", "tiny --pass-pipeline='decompose{'"), "pipeline:");
  expect_error(run("mpk-opt", "tiny --pass-pipeline=infer-deps"), "run decompose first");
  expect_error(run("mpk-opt", "tiny --emit=json"), "--emit");
  expect_error(run("mpk-opt", "tiny --batch 0"), "batch");
  expect_error(run("mpk-opt", "'" + path("good.mpk") + "' --batch 2"), "--batch");
  expect_error(run("mpk-opt", ""), "missing INPUT");
  expect_error(run("mpk-opt", "tiny tiny-qwen3"), "one INPUT");
  expect_error(run("mpk-opt", "tiny --frobnicate"), "--frobnicate");
  expect_error(run("mpk-opt", "tiny -o '" + path("no/such/dir/out.mpk") + "'"), "out.mpk");
  expect_error(run("mpk", "opt no-such-preset"), "no-such-preset");
  expect_error(run("mpk", "import -o '" + path("x.mpk") + "'"), "--model");
  expect_error(run("mpk", "import --model tiny"), "-o");
  expect_error(run("mpk", "import --model tiny --batch 99 -o '" + path("x.mpk") + "'"), "batch");
  expect_error(run("mpk", "import --model '" + wrong_json + "' -o '" + path("x.mpk") + "'"),
               "wrong.json");
  EXPECT_FALSE(fs::exists(path("x.mpk")));
}

}  // namespace
}  // namespace mpk
