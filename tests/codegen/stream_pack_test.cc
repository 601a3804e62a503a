// The weight-stream image plan: images are contiguous and cover each streaming
// descriptor's chunks once, and packing by the plan (emulated here as the device's
// pack kernel does it) puts every weight element where the task bodies read it.
#include "codegen/stream_pack.h"

#include <gtest/gtest.h>

#include <cstring>

#include "tests/codegen/test_util.h"

namespace mpk {
namespace {

using testing::scheduled_preset;

uint16_t value_at(TensorId t, int64_t n, int64_t k) {
  return static_cast<uint16_t>((t * 7919 + n * 131 + k * 17) & 0xffff);
}

// What runtime/device/pack.cuh writes for the plan, with W[n][k] = value_at(...).
std::vector<uint16_t> pack_on_host(const StreamPlan& plan) {
  std::vector<uint16_t> image(plan.bytes / 2, 0xdead);
  for (const StreamBox& b : plan.boxes)
    for (int32_t r = 0; r < b.rows; ++r)
      for (int32_t j = 0; j < 8; ++j)
        for (int32_t e = 0; e < 8; ++e) {
          const uint64_t at = b.dst + r * 128 + ((j ^ (r & 7)) << 4) + e * 2;
          image[at / 2] = r < b.valid_rows ? value_at(b.tensor, b.row + r, b.col + j * 8 + e) : 0;
        }
  return image;
}

// The byte at which a task body finds W[n][k] (n in the member's rows) in the image of
// descriptor `d`: chunks of all members' boxes for the same columns, member after
// member, boxes of rows x 128 bytes with 16-byte pieces swizzled by row % 8.
uint64_t expected_position(const Megakernel& k, const StreamPlan& plan, size_t di, int member, int64_t n,
                           int64_t col) {
  const StreamShape& d = k.stream[di];
  const bool group = d.members.size() > 1;
  const StreamShape& md = member == 0 ? d : k.stream[d.members[member]];
  const int64_t box = col / 64, c = box / d.boxes, b = box % d.boxes;
  const int64_t boxes_here = c == d.col_chunks - 1 ? d.boxes_last : d.boxes;
  int64_t g = 0, r = n - md.row0, rows = md.box_rows, chunk_rows = 0, before_rows = 0;
  if (group) {
    for (size_t m = 0; m < d.members.size(); ++m) {
      const int32_t pr = k.stream[d.members[m]].box_rows;
      chunk_rows += pr;
      if (static_cast<int>(m) < member) before_rows += pr;
    }
  } else {
    g = r / d.box_rows;
    r -= g * d.box_rows;
    rows = chunk_rows = g == d.groups - 1 ? d.last_rows : d.box_rows;
  }
  const int64_t K64 = (int64_t{d.col_chunks} - 1) * d.boxes + d.boxes_last;
  const int64_t j = (col % 64) / 8;
  return plan.offset[di] + static_cast<uint64_t>(g * d.box_rows * 128 * K64 + c * d.boxes * chunk_rows * 128 +
                                                 before_rows * 128 * boxes_here + b * rows * 128 + r * 128 +
                                                 ((j ^ (r & 7)) << 4) + (col % 8) * 2);
}

TEST(StreamPack, ImagesAreContiguousAndCoverEveryChunk) {
  const Module m = scheduled_preset("llama-3.2-1b");
  const Megakernel k = generate_megakernel(m);
  const StreamPlan plan = plan_stream(k, m.program);
  uint64_t at = 0;
  for (const StreamBox& b : plan.boxes) {
    ASSERT_EQ(b.dst, at);
    EXPECT_EQ(b.rows % 8, 0);
    EXPECT_GE(b.valid_rows, 0);
    EXPECT_LE(b.valid_rows, b.rows);
    at += static_cast<uint64_t>(b.rows) * 128;
  }
  EXPECT_EQ(at, plan.bytes);
  int groups = 0;
  // A descriptor has an image when it streams weights of its own (a cooperative share
  // other than share 0 streams share 0's).
  for (size_t i = 0; i < k.tasks.size(); ++i) {
    EXPECT_EQ(plan.offset[i] != kNoStream, k.stream[i].groups > 0 && k.stream[i].weight >= 0) << "descriptor " << i;
    groups += k.stream[i].members.size() > 1;
  }
  EXPECT_GT(groups, 0);
  // Chunks tile the images in order, each within a slot; a descriptor has one chunk per
  // (row group, column chunk).
  ASSERT_EQ(plan.chunk_begin.size(), k.tasks.size() + 1);
  uint64_t next = 0;
  for (const ChunkSpan& c : plan.chunks) {
    EXPECT_EQ(c.offset, next);
    EXPECT_GT(c.bytes, 0u);
    EXPECT_LE(c.bytes, static_cast<uint32_t>(k.slot_bytes));
    EXPECT_EQ(c.bytes % 128, 0u);
    next += c.bytes;
  }
  EXPECT_EQ(next, plan.bytes);
  for (size_t i = 0; i < k.tasks.size(); ++i)
    EXPECT_EQ(plan.chunk_begin[i + 1] - plan.chunk_begin[i],
              k.stream[i].weight >= 0 ? k.stream[i].groups * k.stream[i].col_chunks : 0);
  // Every image starts 1 KiB-aligned (chunks are whole multiples of 8 rows of 128 bytes).
  for (uint64_t off : plan.offset) {
    if (off != kNoStream) {
      EXPECT_EQ(off % 1024, 0u);
    }
  }
}

TEST(StreamPack, EveryWeightElementLandsWhereTheTaskReadsIt) {
  for (const char* preset : {"tiny", "tiny-qwen2", "tiny-qwen3"}) {
    SCOPED_TRACE(preset);
    const Module m = scheduled_preset(preset);
    const Megakernel k = generate_megakernel(m);
    const StreamPlan plan = plan_stream(k, m.program);
    const std::vector<uint16_t> image = pack_on_host(plan);
    int64_t checked = 0, groups = 0;
    for (size_t di = 0; di < k.tasks.size(); ++di) {
      const StreamShape& d = k.stream[di];
      if (d.groups <= 0) continue;
      const int members = d.members.size() > 1 ? static_cast<int>(d.members.size()) : 1;
      groups += members > 1;
      for (int mi = 0; mi < members; ++mi) {
        const size_t own = mi == 0 ? di : static_cast<size_t>(d.members[mi]);
        const Task& task = m.graph.tasks.at(k.tasks[own].task);
        const TensorId w = k.stream[own].weight;
        const int64_t K = m.program.tensor(w).shape[1];
        for (const Region& r : task.reads) {
          if (r.tensor != w) continue;
          for (int64_t n = r.dims[0].lo; n < r.dims[0].hi; ++n)
            for (int64_t col = 0; col < K; col += 5) {
              const uint64_t at = expected_position(k, plan, di, mi, n, col);
              ASSERT_LT(at, plan.bytes);
              ASSERT_EQ(image[at / 2], value_at(w, n, col)) << "descriptor " << di << " row " << n << " col " << col;
              ++checked;
            }
        }
      }
    }
    EXPECT_GT(checked, 1000);
    EXPECT_GT(groups, 0);
  }
}

// A worker streams its queue's descriptors' chunks, in queue order; a cooperative share
// streams its pool instead (llama-3.2-1b's default pipeline has cooperative linears).
TEST(StreamPack, WorkerRecordsFollowTheQueue) {
  for (const char* preset : {"tiny", "llama-3.2-1b"}) {
    SCOPED_TRACE(preset);
    const Module m = scheduled_preset(preset);
    const Megakernel k = generate_megakernel(m);
    const StreamPlan plan = plan_stream(k, m.program);
    size_t total = 0, shares = 0;
    for (int32_t w = 0; w < k.num_workers; ++w) {
      const std::vector<WorkerRecord> records = worker_records(k, plan, w);
      size_t at = 0;
      for (int32_t q = k.queue_offsets[w]; q < k.queue_offsets[w + 1]; ++q) {
        const int32_t d = k.queue_items[q];
        if (k.stream[d].pool >= 0) {
          ASSERT_LT(at, records.size());
          EXPECT_EQ(records[at].chunk, -1);
          EXPECT_EQ(records[at++].pool, k.stream[d].pool);
          ++shares;
          continue;
        }
        for (int32_t c = plan.chunk_begin[d]; c < plan.chunk_begin[d + 1]; ++c) {
          ASSERT_LT(at, records.size());
          EXPECT_EQ(records[at++].chunk, c);
        }
      }
      EXPECT_EQ(at, records.size());
      total += records.size();
    }
    EXPECT_GT(total, 0u);
    if (std::string(preset) == "llama-3.2-1b") {
      EXPECT_GT(shares, 0u);
      // Every pool's image holds all its units: unit_chunks per unit, the last maybe fewer.
      for (const CoopPool& pool : k.pools) {
        const int32_t chunks = plan.chunk_begin[pool.image + 1] - plan.chunk_begin[pool.image];
        EXPECT_GT(pool.units, 0);
        EXPECT_GE(chunks, (pool.units - 1) * pool.unit_chunks + 1);
        EXPECT_LE(chunks, pool.units * pool.unit_chunks);
        EXPECT_EQ(pool.shares, m.machine.sm_count);
      }
    }
  }
}

}  // namespace
}  // namespace mpk
