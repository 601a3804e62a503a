// Hostile command-line values and run outcomes: step counts beyond int32 or max_seq_len on
// every backend, watchdogs that overflow a conversion, non-finite numbers, non-finite
// logits (which must fail the run, not print tokens), and --dump-logits on a disk that
// fills up (the old files must survive whole).
#include <cstdint>
#include <filesystem>

#include "tests/hostile/checkpoint_files.h"
#include "tests/hostile/hostile_fixture.h"

namespace mpk::hostile {
namespace {

TEST_F(HostileTest, StepsBeyondInt32AreRefusedByTheirRange) {
  for (const char* backend : {"sim", "cpu"})
    expect_refused(run("mpk", std::string("run --backend ") + backend + " --model tiny --steps 2147483648 --trace '" +
                                  path("t.db") + "'"),
                   "option '--steps' must be in 1..16777216, got 2147483648");
}

TEST_F(HostileTest, StepsBeyondInt64AreNamedAsSuch) {
  expect_refused(run("mpk", "run --backend cpu --model tiny --steps 99999999999999999999"),
                 "got '99999999999999999999' (beyond int64)");
}

TEST_F(HostileTest, SimStepsBeyondMaxSeqLenAreRefused) {
  expect_refused(run("mpk", "run --backend sim --model tiny --steps 129 --trace '" + path("t.db") + "'"),
                 "option '--steps' (129) exceeds the module's max_seq_len (128)");
}

TEST_F(HostileTest, ExperimentStepsAreNotTruncatedToInt32) {
  expect_refused(run("mpk", "experiment --model tiny --policies critical-path --steps 4294967297 -o '" +
                                path("t.db") + "'"),
                 "option '--steps' must be in 1..16777216, got 4294967297");
}

TEST_F(HostileTest, ExperimentStepsBeyondMaxSeqLenAreRefused) {
  expect_refused(run("mpk", "experiment --model tiny --policies critical-path --steps 200 -o '" +
                                path("t.db") + "'"),
                 "option '--steps' (200) exceeds the module's max_seq_len (128)");
}

TEST_F(HostileTest, TensorParallelRanksAreRefusedByRangeAndByTheModel) {
  for (const char* v : {"0", "9", "-1"})
    expect_refused(run("mpk", std::string("run --backend cpu --model tiny --steps 2 --tp ") + v),
                   std::string("option '--tp' must be in 1..8, got ") + v);
  expect_refused(run("mpk", "run --backend cpu --model tiny --steps 2 --tp 3"),
                 "shard-tp: the model's num_q_heads is 4, which 3 ranks cannot split evenly");
  const CliResult bench = run("mpk", "bench --model tiny --tp 2 --mode both");
  if (bench.err.find("unknown command 'bench'") == std::string::npos)  // a build without CUDA has none
    expect_refused(bench, "--tp above 1 runs the megakernel only (--mode megakernel)");
}

TEST_F(HostileTest, BenchPrefillChunkIsAutoOrRowsInItsRange) {
  for (const char* v : {"x", "129", "-1", "Auto"}) {
    const CliResult r = run("mpk", std::string("bench --model tiny --prompt-len 16 --prefill-chunk ") + v);
    if (r.err.find("unknown command 'bench'") != std::string::npos) return;  // a build without CUDA has none
    expect_refused(r, "option '--prefill-chunk'");
  }
  expect_refused(run("mpk", "bench --model tiny --prompt-len 16 --prefill-chunk 4 --tp 2"),
                 "--prefill-chunk runs on one GPU; give --prefill-chunk 0 with --tp");
}

TEST_F(HostileTest, HugeWatchdogIsRefusedByItsRange) {
  expect_refused(run("mpk", "run --backend cpu --model tiny --steps 2 --watchdog 1e10"),
                 "option '--watchdog' must be a number in 0.001..1e+06, got '1e10'");
}

TEST_F(HostileTest, NonFiniteWatchdogIsRefused) {
  for (const char* v : {"inf", "nan", "-inf"})
    expect_refused(run("mpk", std::string("run --backend cpu --model tiny --steps 2 --watchdog ") + v),
                   "option '--watchdog' must be a number in 0.001..1e+06");
}

TEST_F(HostileTest, LargestWatchdogRuns) {
  const CliResult r = run("mpk", "run --backend cpu --model tiny --steps 2 --watchdog 1e6");
  expect_clean(r);
  EXPECT_EQ(r.status, 0) << r.err;
}

// One NaN in one row of lm_head makes one logit NaN: the argmax still picks a finite
// value, so only a check of every logit catches it.
TEST_F(HostileTest, NonFiniteLogitsFailTheRunNamingStepAndRow) {
  const std::string dir = path("ckpt");
  write_tiny_checkpoint(dir);
  SafetensorsImage img = SafetensorsImage::read(dir + "/model.safetensors");
  const uint64_t at = img.begin("lm_head.weight") + 2 * 256 * 7;  // row 7, column 0 (bf16)
  img.data[at] = static_cast<char>(0xC0);  // bf16 NaN 0x7FC0, little-endian
  img.data[at + 1] = 0x7F;
  img.write(dir + "/model.safetensors");
  expect_refused(run("mpk", "run --backend cpu --model '" + dir + "' --steps 2"),
                 "step 0, batch row 0: the logits hold NaN or infinity");
}

// A disk that fills up while --dump-logits writes (a 1 KiB file size limit; the logits
// take 2 KiB): the old logits and their .json survive whole, and no temporary file stays.
TEST_F(HostileTest, DumpLogitsOnAFullDiskKeepsTheOldFiles) {
  const std::string out = write("logits.bin", "OLD LOGITS");
  write("logits.bin.json", "{\"old\": true}\n");
  const std::string cmd = "bash -c \"trap '' XFSZ; ulimit -f 1; exec timeout -s KILL 60 '" + bin("mpk") +
                          "' run --backend cpu --model tiny --steps 2 --dump-logits '" + out +
                          "'\" >/dev/null 2>'" + path("err") + "'";
  const int raw = std::system(cmd.c_str());
  CliResult r;
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  r.err = read(path("err"));
  expect_refused(r, "cannot write '" + out + "'");
  EXPECT_EQ(read(out), "OLD LOGITS");
  EXPECT_EQ(read(out + ".json"), "{\"old\": true}\n");
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir_)) files += e.path().filename().string()[0] != '.';
  EXPECT_EQ(files, 3) << "a temporary file was left behind";  // logits.bin, logits.bin.json, err
}

}  // namespace
}  // namespace mpk::hostile
