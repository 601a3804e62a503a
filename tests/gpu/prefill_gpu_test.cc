// Prefill on the GPU (docs/ir.md "Prefill chunks", docs/megakernel.md "Prefill"): a prefill
// chunk's megakernel, sharing a decode megakernel's KV caches and weights, fills them with
// a prompt's first E = P - 1 positions C at a time, and the decode goes on from step E. Its
// linears run on tensor cores, so the caches it fills are close to step-by-step decoding's,
// not the same bits: the caches are held to a small bound and the tokens and logits after
// it to the fidelity gate (docs/ir.md "Exactness"). A decode launch from step E on caches
// that step-by-step decoding filled is the same bits as the rest of that run. Skipped
// without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "runtime/cpu/bf16.h"
#include "tests/gpu/gpu_test_util.h"
#include "tests/runtime/fidelity_gate.h"

namespace mpk {
namespace {

using namespace gputest;

std::vector<int64_t> prompt_of(int64_t n) {
  std::vector<int64_t> p;
  for (int64_t i = 0; i < n; ++i) p.push_back((i * 37 + 11) % 256);
  return p;
}

// The relative L2 difference of the positions < end of two bf16 caches [1, S, nkv, hd].
double cache_difference(const std::vector<char>& a, const std::vector<char>& b, int64_t end, int64_t row) {
  std::vector<float> fa, fb;
  for (int64_t i = 0; i < end * row; ++i) {
    uint16_t x, y;
    std::memcpy(&x, a.data() + 2 * i, 2);
    std::memcpy(&y, b.data() + 2 * i, 2);
    fa.push_back(bf16_to_f32(x));
    fb.push_back(bf16_to_f32(y));
  }
  return rel_error(fa, fb);
}

// Every KV cache of `m`: its name and the elements of one position.
std::vector<std::pair<std::string, int64_t>> caches_of(const Module& m) {
  std::vector<std::pair<std::string, int64_t>> out;
  for (const Tensor& t : m.program.tensors)
    if (t.role == TensorRole::kKvCache) out.push_back({t.name, t.shape[2] * t.shape[3]});
  return out;
}

constexpr double kCacheBound = 0.02;  // relative L2, per cache (bf16 keeps 8 bits)

struct Case {
  std::string model;
  int64_t chunk;
  std::string pipeline = kDefaultPipeline;
  std::vector<int64_t> prompts = {1, 2, 7, 16, 17, 40};
};

// Step-by-step decoding against a prefill then decode, for prompts of several lengths.
void check_prefill(const Case& c) {
  const Module decode = scheduled(c.model, c.pipeline);
  const Module chunk = scheduled(c.model, "prefill-chunk{rows=" + std::to_string(c.chunk) + "}," + c.pipeline);
  const Weights w = random_weights(decode, 17);
  GpuMegakernel ref(decode, w);
  GpuMegakernel dec(decode, w);
  GpuMegakernel pre(chunk, w, dec);
  for (int64_t len : c.prompts) {
    const std::string what = c.model + " chunk " + std::to_string(c.chunk) + " prompt " + std::to_string(len);
    SCOPED_TRACE(what);
    const int64_t end = len - 1, steps = len + 6;
    GpuRunOptions o;
    o.steps = steps;
    o.prompt = prompt_of(len);
    const GpuRunResult step_by_step = ref.run(o);

    // The caches after the prefill alone, against step-by-step decoding's below E.
    const GpuRunResult filled = pre.prefill(o);
    EXPECT_EQ(filled.steps, (end + c.chunk - 1) / c.chunk);
    for (const auto& [name, row] : caches_of(decode)) {
      if (end == 0) break;
      const double d = cache_difference(dec.tensor_bytes(name), ref.tensor_bytes(name), end, row);
      EXPECT_LE(d, kCacheBound) << name;
    }

    // Prefill, then decode from E: the gate, with step-by-step's tokens before E (the
    // gate replays the prompt there).
    std::vector<int64_t> streamed;
    o.on_step = [&](int64_t step, const std::vector<int32_t>&) { streamed.push_back(step); };
    const GpuPrefillResult r = dec.run_prefilled(pre, o);
    o.on_step = nullptr;
    ASSERT_EQ(r.decode.first_step, end);
    ASSERT_EQ(r.decode.steps, steps);
    EXPECT_EQ(r.prefill.steps, (end + c.chunk - 1) / c.chunk);
    EXPECT_GT(r.first_token_ms, 0);
    ASSERT_EQ(streamed.size(), static_cast<size_t>(steps - end));
    for (size_t i = 0; i < streamed.size(); ++i) EXPECT_EQ(streamed[i], end + static_cast<int64_t>(i));
    std::vector<std::vector<int32_t>> tokens = r.decode.tokens;
    for (int64_t s = 0; s < end; ++s) {
      EXPECT_EQ(tokens[s], std::vector<int32_t>{-1});
      tokens[s] = step_by_step.tokens[s];
    }
    const fidelity::Verdict v = fidelity::check(decode, w, o.prompt, 1, {tokens, r.decode.logits, steps - 1}, what);
    const fidelity::Verdict base =
        fidelity::check(decode, w, o.prompt, 1, {step_by_step.tokens, step_by_step.logits, steps - 1}, what + " step by step");
    if (v.near_ties == 0 && base.near_ties == 0) {
      EXPECT_TRUE(same_tokens(tokens, step_by_step.tokens));
    }
    if (end == 0) {  // no prefill: the decode is step-by-step decoding
      EXPECT_EQ(r.decode.logits, step_by_step.logits);
      EXPECT_TRUE(same_tokens(r.decode.tokens, step_by_step.tokens));
    }
    std::printf("%-36s worst logit %.2g of the largest, near ties %lld, first token %.3f ms\n", what.c_str(), v.worst,
                static_cast<long long>(v.near_ties), r.first_token_ms);
  }
}

TEST(PrefillGpu, TinyChunk16PassesTheFidelityGate) {
  MPK_REQUIRE_GPU();
  check_prefill({"tiny", 16});
}

TEST(PrefillGpu, TinyQwen3Chunk16PassesTheFidelityGate) {
  MPK_REQUIRE_GPU();
  check_prefill({"tiny-qwen3", 16});
}

TEST(PrefillGpu, AnOddChunkPassesTheFidelityGate) {
  MPK_REQUIRE_GPU();
  check_prefill({"tiny", 5});
  check_prefill({"tiny-qwen3", 5});
}

// 32 rows: four n8 tiles on the tensor cores.
TEST(PrefillGpu, Chunk32PassesTheFidelityGate) {
  MPK_REQUIRE_GPU();
  check_prefill({"tiny", 32});
  check_prefill({"tiny-qwen3", 32});
}

// Above 32 rows the warps split the linears' outputs (one MMA chain per output): 40 rows
// (five n8 tiles), 64 and 128, prompts up to the chunk and past it (tiny's max_seq: 128).
TEST(PrefillGpu, ChunksAbove32RowsPassTheFidelityGate) {
  MPK_REQUIRE_GPU();
  const std::vector<int64_t> prompts = {1, 17, 40, 100, 121};
  check_prefill({"tiny-qwen3", 40, kDefaultPipeline, prompts});
  check_prefill({"tiny", 64, kDefaultPipeline, prompts});
  check_prefill({"tiny", 128, kDefaultPipeline, prompts});
}

// Unfused: plain rope and kv_append operators before the attention, whose partials (two
// splits) attend over the chunk's rows.
TEST(PrefillGpu, UnfusedSplitAttentionPassesTheFidelityGate) {
  MPK_REQUIRE_GPU();
  check_prefill({"tiny-qwen3", 16, pipeline_for("critical-path", "decompose{attention-splits=2}")});
}

// A decode launch from step E, on caches that step-by-step decoding filled (its own run
// of E steps), is the rest of the step-by-step run, bit for bit; with a stop token it
// streams steps E ... and stops at the first of them that made it.
TEST(PrefillGpu, DecodeFromStepEIsTheRestOfStepByStepDecoding) {
  MPK_REQUIRE_GPU();
  for (const int64_t batch : {1, 3}) {
    SCOPED_TRACE("batch " + std::to_string(batch));
    const Module m = scheduled("tiny-qwen3", pipeline_for("critical-path", "decompose", true), batch);
    const Weights w = random_weights(m, 9);
    GpuMegakernel g(m, w);
    GpuRunOptions o;
    o.steps = 30;
    o.prompt.clear();
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t t : prompt_of(12)) o.prompt.push_back((t + 5 * b) % 256);
    o.prompt_rows = batch;
    o.logits_history = true;
    const GpuRunResult whole = g.run(o);
    for (const int64_t end : {11, 20}) {
      GpuRunOptions head = o;
      head.steps = end;
      g.run(head);  // fills positions 0..end-1
      GpuRunOptions rest = o;
      rest.first_step = end;
      const GpuRunResult r = g.run(rest);
      ASSERT_EQ(r.first_step, end);
      ASSERT_EQ(r.steps, o.steps);
      for (int64_t s = end; s < o.steps; ++s) EXPECT_EQ(r.tokens[s], whole.tokens[s]) << "step " << s;
      EXPECT_EQ(r.logits, whole.logits);
      const size_t per_step = whole.logits_history.size() / static_cast<size_t>(o.steps);
      ASSERT_EQ(r.logits_history.size(), per_step * static_cast<size_t>(o.steps - end));
      EXPECT_TRUE(std::equal(r.logits_history.begin(), r.logits_history.end(),
                             whole.logits_history.begin() + static_cast<int64_t>(per_step) * end));
      if (batch > 1) continue;
      // Stopping at a token from first_generated on, which counts the run's steps: the
      // first step from E that made it.
      g.run(head);
      GpuRunOptions stop = rest;
      stop.stop_ids = {whole.tokens[end + 3][0]};
      stop.first_generated = end;
      std::vector<int64_t> seen;
      stop.on_step = [&](int64_t step, const std::vector<int32_t>&) { seen.push_back(step); };
      const GpuRunResult stopped = g.run(stop);
      int64_t at = end;
      while (whole.tokens[at][0] != stop.stop_ids[0]) ++at;
      EXPECT_EQ(stopped.stopped_at, at);
      EXPECT_EQ(stopped.steps, at + 1);
      ASSERT_EQ(seen.size(), static_cast<size_t>(at + 1 - end));
      EXPECT_EQ(seen.front(), end);
    }
  }
}

// Traced: the prefill's records carry its chunk steps, the decode's the steps from E, and
// the decode's first task starts after the prefill's last ended.
TEST(PrefillGpu, TracesCarryTheirStepsAndTheGap) {
  MPK_REQUIRE_GPU();
  const Module decode = scheduled("tiny", kDefaultPipeline);
  const Module chunk = scheduled("tiny", std::string("prefill-chunk{rows=16},") + kDefaultPipeline);
  const Weights w = random_weights(decode, 4);
  GpuMegakernel dec(decode, w);
  GpuMegakernel pre(chunk, w, dec);
  GpuRunOptions o;
  o.steps = 45;
  o.prompt = prompt_of(40);
  o.trace = true;
  const GpuPrefillResult r = dec.run_prefilled(pre, o);
  ASSERT_EQ(r.prefill.steps, 3);
  ASSERT_FALSE(r.prefill.trace.empty());
  ASSERT_FALSE(r.decode.trace.empty());
  EXPECT_EQ(r.prefill.trace_overflow + r.decode.trace_overflow, 0u);
  const auto [pmin, pmax] = std::minmax_element(r.prefill.trace.begin(), r.prefill.trace.end(),
                                                [](const auto& a, const auto& b) { return a.step < b.step; });
  EXPECT_EQ(pmin->step, 0);
  EXPECT_EQ(pmax->step, 2);
  const auto [dmin, dmax] = std::minmax_element(r.decode.trace.begin(), r.decode.trace.end(),
                                                [](const auto& a, const auto& b) { return a.step < b.step; });
  EXPECT_EQ(dmin->step, 39);
  EXPECT_EQ(dmax->step, 44);
  EXPECT_GE(r.gap_us, 0);
  std::printf("prefill %.3f ms (3 chunk steps), decode %.3f ms (6 steps), gap %.1f us, first token %.3f ms\n",
              r.prefill.kernel_ms, r.decode.kernel_ms, r.gap_us, r.first_token_ms);
}

// What a prefill chunk refuses: run() and the per-op baseline, and a chunk that does not
// share the decode megakernel it is run with.
TEST(PrefillGpu, RefusesWhatItCannotRun) {
  MPK_REQUIRE_GPU();
  const Module decode = scheduled("tiny", kDefaultPipeline);
  const Module chunk = scheduled("tiny", std::string("prefill-chunk{rows=4},") + kDefaultPipeline);
  const Weights w = random_weights(decode, 2);
  GpuMegakernel dec(decode, w), other(decode, w);
  GpuMegakernel pre(chunk, w, dec);
  GpuRunOptions o;
  o.steps = 8;
  o.prompt = prompt_of(5);
  EXPECT_THROW(pre.run(o), Error);
  EXPECT_THROW(pre.run_per_op(o), Error);
  EXPECT_THROW(other.run_prefilled(pre, o), Error);
  EXPECT_THROW(dec.prefill(o), Error);
  o.first_step = 8;
  EXPECT_THROW(dec.run(o), Error);
}

}  // namespace
}  // namespace mpk
