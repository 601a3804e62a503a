// The megakernel's task table is data the GPU reads byte for byte: a refactoring of
// codegen/ or of the argument slots (runtime/device/task_slots.cuh) must leave every
// descriptor, wait, trigger, relocation, stream shape and pool of the presets as it
// was. These fingerprints were recorded before the named slots replaced the numbered
// ones (tiny-qwen2's, of the q/k/v biases, when Qwen2 came), and re-recorded when the
// attention partials' splits came to follow the step (their descriptors name the split,
// the L2 prefetch the split count, and the default splits grew) and the decode
// attention's V ring came (its least scratch, two tiles); a change to them is a change of
// GPU behaviour and needs a GPU run.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <type_traits>

#include "codegen/megakernel.h"
#include "ir/fnv1a.h"
#include "tests/codegen/test_util.h"

namespace mpk {
namespace {

using testing::scheduled_preset;

// FNV-1a over the bytes of trivially copyable values, field by field (no padding).
class Fingerprint {
 public:
  template <typename T>
  void add(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    h_.bytes(&v, sizeof v);
  }
  void add(const std::string& s) { h_.sized(s); }
  template <typename T>
  void add(const std::vector<T>& v) {
    add(v.size());
    for (const T& x : v) add(x);
  }
  std::string hex() const { return h_.hex(); }

 private:
  Fnv1a h_{kFnvTruncatedOffset};  // as recorded
};

// Everything of a Megakernel but its source text: the table the runtime uploads and
// the per-op launches.
std::string table_fingerprint(const Megakernel& k) {
  static_assert(sizeof(abi::TaskDesc) == 192 && std::has_unique_object_representations_v<abi::TaskDesc>);
  Fingerprint f;
  f.add(k.tasks);
  f.add(k.relocations.size());
  for (const Relocation& r : k.relocations) {
    f.add(r.task);
    f.add(r.slot);
    f.add(r.tensor);
    f.add(r.byte_offset);
    f.add(r.rope_table);
  }
  f.add(k.stream.size());
  for (const StreamShape& s : k.stream) {
    for (int32_t v : {s.weight, s.weight2, s.pool, s.row0, s.groups, s.box_rows, s.last_rows, s.col_chunks, s.boxes,
                      s.boxes_last})
      f.add(v);
    f.add(s.members);
  }
  f.add(k.rope_inv.size());
  for (const auto& inv : k.rope_inv) f.add(inv);
  f.add(k.waits.size());
  for (const abi::WaitEntry& w : k.waits) f.add(w);
  f.add(k.triggers);
  f.add(k.queue_offsets);
  f.add(k.queue_items);
  f.add(k.op_launches.size());
  for (const OpLaunch& l : k.op_launches) {
    f.add(l.name);
    f.add(l.tasks);
  }
  f.add(k.pools.size());
  for (const CoopPool& p : k.pools)
    for (int32_t v : {p.op, p.image, p.units, p.unit_chunks, p.shares}) f.add(v);
  for (int64_t v : {int64_t{k.pool_slots}, int64_t{k.num_events}, int64_t{k.num_workers}, int64_t{k.threads},
                    int64_t{k.stages}, int64_t{k.slot_bytes}, int64_t{k.inflight}, int64_t{k.scratch_bytes},
                    k.dynamic_smem_bytes, k.stream_bytes_per_step})
    f.add(v);
  return f.hex();
}

// The dispatch's cases: which template instantiation each descriptor runs.
std::string instantiation_fingerprint(const Megakernel& k) {
  Fingerprint f;
  f.add(k.instantiations.size());
  for (const std::string& s : k.instantiations) f.add(s);
  f.add(k.prefetches.size());
  for (const std::string& s : k.prefetches) f.add(s);
  return f.hex();
}

struct Case {
  const char* preset;
  const char* pipeline;
  int64_t max_seq_len;
  const char* table;
  const char* instantiations;
};

// Every descriptor form: the default pipeline (everything fused: q/k/v and gate/up
// groups, fused attention with one split and with eight, SwiGLU, a normed cooperative
// lm_head with its argmax), per-head attention tasks with kv_append tasks after them,
// a kv_append that ropes k beside a plain attention with cooperative linears (one query
// head per task, as the auto rule gave when it was recorded), nothing fused (rms_norm,
// qk_norm, rope, kv_append, attention partials and merges, residual_add, silu_mul,
// argmax tasks), and tiny-qwen2's biased q/k/v group beside attention tasks of two query
// heads (the default pipeline).
constexpr const char* kPerHead =
    "fuse-residual,fuse-norm,fuse-rope,fuse-attention,fuse-swiglu,fuse-argmax,decompose{attention-heads=1},"
    "infer-deps,assign-sm{policy=critical-path}";
constexpr const char* kRopedAppend =
    "fuse-residual,fuse-norm,fuse-rope,decompose{coop=on,attention-heads=1},infer-deps,"
    "assign-sm{policy=critical-path}";
constexpr const char* kFusedSplit =
    "fuse-residual,fuse-norm,fuse-rope,fuse-attention,fuse-swiglu,fuse-argmax,decompose{attention-splits=2},"
    "infer-deps,assign-sm{policy=locality}";
constexpr const char* kUnfused = "decompose{attention-splits=2},infer-deps,assign-sm{policy=round-robin}";

const Case kCases[] = {
    {"llama-3.2-1b", kDefaultPipeline, 0, "fde5e9a3d688a447", "513ff959cec95369"},
    {"qwen3-8b", kDefaultPipeline, 0, "7fb227817174cff5", "03f0992d30efc7cc"},
    {"llama-3.2-1b", kPerHead, 128, "a1a36ddd81638760", "851b97fba8d4e46d"},
    {"tiny", kRopedAppend, 0, "1609b74ae3dff0f5", "4f308c66cdbed80f"},
    {"tiny-qwen3", kFusedSplit, 0, "bf4ec6b8fdd75a0c", "a1d0c34709a139ac"},
    {"tiny-qwen3", kUnfused, 0, "ef2cc428a26d7a06", "a0a08a4e67195fdb"},
    {"tiny-qwen2", kDefaultPipeline, 0, "f3ea3366da264a30", "f7e99999841ef5f8"},
};

TEST(TableFingerprint, PresetTablesAreByteIdenticalToTheRecordedOnes) {
  for (const Case& c : kCases) {
    const Megakernel k = generate_megakernel(scheduled_preset(c.preset, c.pipeline, 1, c.max_seq_len));
    SCOPED_TRACE(std::string(c.preset) + " under " + c.pipeline);
    EXPECT_EQ(table_fingerprint(k), c.table);
    EXPECT_EQ(instantiation_fingerprint(k), c.instantiations);
  }
}

}  // namespace
}  // namespace mpk
