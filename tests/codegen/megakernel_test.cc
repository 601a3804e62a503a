// Tests of the megakernel generator: task table, queues, events, deduplicated
// instantiations and the generated source, for scheduled presets (no GPU needed).
#include "codegen/megakernel.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "ir/error.h"
#include "tests/codegen/test_util.h"

namespace mpk {
namespace {

using testing::scheduled_preset;

// Bytes of the weights the linears and the LM head read (each streamed once per step).
int64_t weight_bytes(const Module& m) {
  std::set<TensorId> seen;
  int64_t bytes = 0;
  for (const Operator& op : m.program.ops) {
    if (op.kind != OpKind::kLinear && op.kind != OpKind::kLmHead) continue;
    const LinearForm f = linear_form(op);
    for (TensorId w : {f.weight, f.up})
      if (w >= 0 && seen.insert(w).second) bytes += m.program.tensor(w).num_bytes();
  }
  return bytes;
}

// The i-th wait / trigger of a descriptor, inline or from the tables.
const abi::WaitEntry& wait_of(const Megakernel& k, const abi::TaskDesc& d, int i) {
  return i < abi::kInlineWaits ? d.wait[i] : k.waits.at(d.wait_begin + i - abi::kInlineWaits);
}
int32_t trigger_of(const Megakernel& k, const abi::TaskDesc& d, int i) {
  return i < abi::kInlineTrigs ? d.trig[i] : k.triggers.at(d.trig_begin + i - abi::kInlineTrigs);
}

TEST(MegakernelGen, InstantiationsAreUniqueAndCoverEveryTask) {
  const Module m = scheduled_preset("tiny");
  const Megakernel k = generate_megakernel(m);
  ASSERT_GE(k.tasks.size(), m.graph.tasks.size());
  const std::set<std::string> unique(k.instantiations.begin(), k.instantiations.end());
  EXPECT_EQ(unique.size(), k.instantiations.size());
  EXPECT_LT(k.instantiations.size(), m.graph.tasks.size() / 2);
  std::vector<int> used(k.instantiations.size(), 0);
  for (size_t t = 0; t < k.tasks.size(); ++t) {
    ASSERT_GE(k.tasks[t].inst, 0);
    ASSERT_LT(k.tasks[t].inst, static_cast<int>(k.instantiations.size()));
    if (t < m.graph.tasks.size()) {
      EXPECT_EQ(k.tasks[t].task, static_cast<int32_t>(t));
    }
    used[k.tasks[t].inst] = 1;
  }
  for (size_t i = 0; i < used.size(); ++i) EXPECT_TRUE(used[i]) << k.instantiations[i];
  // Every case of the dispatch is in the source exactly once.
  for (size_t i = 0; i < k.instantiations.size(); ++i)
    EXPECT_NE(k.source.find("case " + std::to_string(i) + ": " + k.instantiations[i]), std::string::npos);
}

TEST(MegakernelGen, QueuesFollowTheSchedule) {
  const Module m = scheduled_preset("tiny");
  const Megakernel k = generate_megakernel(m);
  const auto& workers = m.graph.schedule.workers;
  ASSERT_EQ(k.queue_offsets.size(), workers.size() + 1);
  size_t groups = 0;
  for (size_t w = 0; w < workers.size(); ++w) {
    // Expand groups into their member tasks: the schedule's order comes back.
    std::vector<int32_t> q;
    for (int32_t i = k.queue_offsets[w]; i < k.queue_offsets[w + 1]; ++i) {
      const int32_t item = k.queue_items[i];
      if (item < static_cast<int32_t>(m.graph.tasks.size())) {
        q.push_back(item);
        continue;
      }
      ++groups;
      const abi::TaskDesc& d = k.tasks.at(item);
      ASSERT_GE(d.members, 2);
      q.push_back(d.task);
      for (int j = 1; j < d.members; ++j) q.push_back(d.member[j - 1]);
    }
    EXPECT_EQ(q, std::vector<int32_t>(workers[w].begin(), workers[w].end())) << "worker " << w;
  }
  EXPECT_GT(groups, 0u);  // q/k/v and gate/up tasks on one worker run as groups
  EXPECT_EQ(k.tasks.size(), m.graph.tasks.size() + groups);
}

TEST(MegakernelGen, GroupsShareXAndTriggerEveryMembersEvents) {
  const Module m = scheduled_preset("llama-3.2-1b");
  const Megakernel k = generate_megakernel(m);
  const size_t n = m.graph.tasks.size();
  ASSERT_GT(k.tasks.size(), n);
  for (size_t i = n; i < k.tasks.size(); ++i) {
    const abi::TaskDesc& d = k.tasks[i];
    const Task& lead = m.graph.tasks[d.task];
    std::multiset<int32_t> expected, got;
    for (int j = 0; j < d.members; ++j) {
      const TaskId t = j == 0 ? d.task : d.member[j - 1];
      const Task& mt = m.graph.tasks[t];
      EXPECT_EQ(mt.kind, TaskKind::kLinear);
      EXPECT_EQ(m.program.ops[mt.op].inputs[0], m.program.ops[lead.op].inputs[0]);
      for (EventId e = 0; e < static_cast<EventId>(m.graph.events.size()); ++e)
        for (TaskId p : m.graph.events[e].producers)
          if (p == t) expected.insert(e);
    }
    for (int j = 0; j < d.trig_count; ++j) got.insert(trigger_of(k, d, j));
    EXPECT_EQ(got, expected);
    // It waits for every member's events, and beyond the leader's only for earlier
    // steps' (a group cannot wait on its own step for more than its first task did).
    std::set<EventId> waits, member_waits, leader_waits;
    for (int j = 0; j < d.wait_count; ++j) waits.insert(wait_of(k, d, j).event);
    for (EventId e = 0; e < static_cast<EventId>(m.graph.events.size()); ++e)
      for (int j = 0; j < d.members; ++j) {
        const auto& c = m.graph.events[e].consumers;
        if (std::find(c.begin(), c.end(), j == 0 ? d.task : d.member[j - 1]) == c.end()) continue;
        member_waits.insert(e);
        if (j == 0) leader_waits.insert(e);
      }
    EXPECT_EQ(waits, member_waits);
    for (EventId e : member_waits)
      if (!leader_waits.count(e)) {
        EXPECT_GT(m.graph.events[e].step_distance, 0) << "event " << e;
      }
    // The group's pointers: the leader's (x, its y; with a fused norm also the norm
    // weight, which all members share), then each member's y in its group slot.
    std::set<int> slots;
    for (const Relocation& r : k.relocations) {
      if (r.task != static_cast<TaskId>(i)) continue;
      EXPECT_TRUE(slots.insert(r.slot).second) << "slot " << r.slot << " relocated twice";
      int member = -1;
      for (int j = 0; j < abi::slots::Linear::kMaxGroupMembers; ++j)
        if (r.slot == abi::slots::Linear::group_y(j).index) member = j;
      if (member < 0) continue;
      const TaskId mt = member == 0 ? d.task : d.member[member - 1];
      const Operator& op = m.program.ops[m.graph.tasks[mt].op];
      EXPECT_EQ(r.tensor, op.outputs[0]) << "group member " << member;
    }
    const Operator& lead_op = m.program.ops[lead.op];
    EXPECT_EQ(slots.size(), static_cast<size_t>(d.members + (linear_extra(lead_op) == LinearExtra::kNorm ? 2 : 1)));
    for (int j = 1; j < d.members; ++j) {
      const Operator& op = m.program.ops[m.graph.tasks[d.member[j - 1]].op];
      EXPECT_EQ(op.inputs.size(), lead_op.inputs.size());
      if (op.inputs.size() == 3) {
        EXPECT_EQ(op.inputs[2], lead_op.inputs[2]);
      }
    }
  }
}

// With one query head per attention task, k_proj and v_proj also wait for the previous
// step's kv_append (it read the k and v they overwrite); q/k/v still run as groups.
TEST(MegakernelGen, QkvGroupsSurviveWaitsOnThePreviousStep) {
  const std::string per_head = "fuse-residual,fuse-norm,fuse-rope,fuse-attention,fuse-swiglu,fuse-argmax,"
                               "decompose{attention-heads=1},infer-deps,assign-sm{policy=critical-path}";
  const std::string per_kv_head = "fuse-residual,fuse-norm,fuse-rope,fuse-attention,fuse-swiglu,fuse-argmax,"
                                  "decompose{attention-heads=4},infer-deps,assign-sm{policy=critical-path}";
  auto groups = [](const Module& m) {
    const Megakernel k = generate_megakernel(m);
    return k.tasks.size() - m.graph.tasks.size();
  };
  const Module heads = scheduled_preset("llama-3.2-1b", per_head, 1, 128);  // one split
  bool cross_step_wait = false;
  for (const Event& e : heads.graph.events)
    for (TaskId c : e.consumers)
      cross_step_wait |= e.step_distance > 0 && heads.program.ops[heads.graph.tasks[c].op].name == "L3.k_proj";
  EXPECT_TRUE(cross_step_wait);
  EXPECT_EQ(groups(heads), groups(scheduled_preset("llama-3.2-1b", per_kv_head, 1, 128)));
}

TEST(MegakernelGen, WaitsAndTriggersMatchTheEvents) {
  // Under every policy, and with a module whose tasks wait on more events than the
  // descriptor holds inline (hand-made events), so that the tables are used too.
  Module many = scheduled_preset("tiny");
  for (TaskId p = 0; p < 4; ++p) {
    Event e;
    e.producers = {p};
    e.consumers = {static_cast<TaskId>(many.graph.tasks.size() - 1)};
    e.target = 1;
    many.graph.events.push_back(e);
  }
  const std::vector<Module> modules = {many, scheduled_preset("tiny"),
                                      scheduled_preset("tiny", "decompose,infer-deps,assign-sm{policy=round-robin}")};
  for (const Module& m : modules) {
    const Megakernel k = generate_megakernel(m);
    EXPECT_EQ(k.num_events, static_cast<int32_t>(m.graph.events.size()));
    const TaskId n = static_cast<TaskId>(m.graph.tasks.size());
    int most_waits = 0;
    for (TaskId t = 0; t < n; ++t) {
      const abi::TaskDesc& d = k.tasks[t];
      std::set<EventId> waits, trigs;
      for (int i = 0; i < d.wait_count; ++i) {
        const abi::WaitEntry& w = wait_of(k, d, i);
        const Event& e = m.graph.events.at(w.event);
        EXPECT_EQ(w.target, e.target);
        EXPECT_EQ(w.distance, e.step_distance);
        waits.insert(w.event);
      }
      for (int i = 0; i < d.trig_count; ++i) trigs.insert(trigger_of(k, d, i));
      std::set<EventId> want_waits, want_trigs;
      for (EventId e = 0; e < static_cast<EventId>(m.graph.events.size()); ++e) {
        const Event& ev = m.graph.events[e];
        if (std::find(ev.consumers.begin(), ev.consumers.end(), t) != ev.consumers.end()) want_waits.insert(e);
        if (std::find(ev.producers.begin(), ev.producers.end(), t) != ev.producers.end()) want_trigs.insert(e);
      }
      EXPECT_EQ(waits, want_waits) << "task " << t;
      EXPECT_EQ(trigs, want_trigs) << "task " << t;
      most_waits = std::max(most_waits, d.wait_count);
    }
    if (&m == &modules[0]) {
      EXPECT_GT(most_waits, abi::kInlineWaits);
    }
  }
}

TEST(MegakernelGen, WeightStreamCoversEachLinearTasksRows) {
  const Module m = scheduled_preset("llama-3.2-1b");
  const Megakernel k = generate_megakernel(m);
  int64_t expected = 0, swiglu = 0, cooperative = 0;
  for (TaskId t = 0; t < static_cast<TaskId>(m.graph.tasks.size()); ++t) {
    const Task& task = m.graph.tasks[t];
    const StreamShape& st = k.stream[t];
    if (task.kind != TaskKind::kLinear && task.kind != TaskKind::kLmHead) {
      EXPECT_EQ(st.groups, 0);
      EXPECT_EQ(st.weight, -1);
      continue;
    }
    const TensorId w = m.program.ops[task.op].inputs[1];
    const int64_t K = m.program.tensor(w).shape[1];
    Range rows;
    for (const Region& r : task.reads)
      if (r.tensor == w) rows = r.dims[0];
    ASSERT_GT(st.groups, 0);
    EXPECT_EQ(st.row0, rows.lo);
    // Row groups cover the task's rows; boxes cover K; every chunk fits a slot.
    EXPECT_GE(int64_t{st.box_rows} * (st.groups - 1) + st.last_rows, rows.size());
    EXPECT_LT(int64_t{st.box_rows} * (st.groups - 1), rows.size());
    EXPECT_EQ(st.box_rows % 8, 0);
    EXPECT_EQ(st.last_rows % 8, 0);
    EXPECT_LE(st.box_rows, 256);
    EXPECT_EQ(int64_t{st.boxes} * (st.col_chunks - 1) + st.boxes_last, K / 64);
    // A SwiGLU linear streams the same rows of its up weight in each chunk too.
    const TensorId up = linear_form(m.program.ops[task.op]).up;
    const int parts = up >= 0 ? 2 : 1;
    EXPECT_LE(parts * st.box_rows * 128 * st.boxes, k.slot_bytes);
    swiglu += up >= 0;
    // A cooperative linear's shares stream one image, share 0's; their row groups tile
    // the units.
    const CoopShare coop = coop_share(task);
    if (coop.cooperative()) {
      ASSERT_GE(st.pool, 0);
      const CoopPool& pool = k.pools[st.pool];
      EXPECT_EQ(pool.shares, coop.shares);
      EXPECT_EQ(pool.units, coop.units(rows.size()));
      EXPECT_EQ(coop.unit_rows % st.box_rows, 0);
      EXPECT_EQ(pool.unit_chunks, coop.unit_rows / st.box_rows * st.col_chunks);
      ++cooperative;
      if (pool.image != t) {
        EXPECT_EQ(st.weight, -1);
        continue;
      }
    }
    EXPECT_EQ(st.weight, w);
    EXPECT_EQ(st.weight2, up);
    expected += parts * rows.size() * K * 2;
  }
  EXPECT_GT(swiglu, 0);       // the default pipeline fuses gate, up and silu_mul
  EXPECT_GT(cooperative, 0);  // and makes the SwiGLU linears and the LM head cooperative
  EXPECT_EQ(k.stream_bytes_per_step, expected);
  EXPECT_EQ(k.stream_bytes_per_step, weight_bytes(m));
}

TEST(MegakernelGen, SharedMemoryFitsTheBudget) {
  const Module m = scheduled_preset("llama-3.2-1b");
  MegakernelOptions o;
  const Megakernel k = generate_megakernel(m, o);
  EXPECT_GE(k.stages, 2);
  EXPECT_LE(k.dynamic_smem_bytes, o.smem_bytes);
  EXPECT_EQ(k.dynamic_smem_bytes, 1024 + int64_t{k.stages} * k.slot_bytes + k.scratch_bytes);
  EXPECT_EQ(k.num_workers, static_cast<int32_t>(m.graph.schedule.workers.size()));
  // Above batch 1 the tensor-core bodies keep x within a fixed budget (abi::
  // tc_linear_scratch: whole, or a ring of slices): even qwen3-8b's down_proj at batch 16
  // (x of 16 x 12288 bf16, 384 KiB) leaves full slots and a ring of at least 3.
  for (const auto& [preset, batch] : {std::pair<const char*, int64_t>{"llama-3.2-1b", 8}, {"qwen3-8b", 8}, {"qwen3-8b", 16}}) {
    SCOPED_TRACE(std::string(preset) + " batch " + std::to_string(batch));
    const Megakernel kb = generate_megakernel(scheduled_preset(preset, kDefaultPipeline, batch), o);
    EXPECT_GT(kb.scratch_bytes, k.scratch_bytes);
    EXPECT_EQ(kb.slot_bytes, o.slot_bytes);
    EXPECT_GE(kb.stages, 3);
    EXPECT_LE(kb.dynamic_smem_bytes, o.smem_bytes);
  }
}

// abi::tc_linear_scratch: x whole when it fits the budget (a decode's, or a prefill
// chunk's larger one), else a ring of at least two slices that, with the chunks
// tc_max_boxes allows, stays within it.
TEST(MegakernelGen, TensorCoreScratchKeepsXWithinItsBudget) {
  EXPECT_TRUE(abi::tc_linear_scratch(8, 2048, 128, 64, 8, true, abi::kTcXBytes).whole());    // llama-3.2-1b's normed x
  EXPECT_FALSE(abi::tc_linear_scratch(8, 8192, 1024, 16, 8, false, abi::kTcXBytes).whole()); // its down_proj's
  // A chunk of 16 rows of qwen3-8b's normed x, and of 32 of llama-3.2-1b's, whole in a chunk's kernel only.
  EXPECT_FALSE(abi::tc_linear_scratch(16, 4096, 1024, 16, 8, true, abi::tc_x_budget(false, 16)).whole());
  EXPECT_TRUE(abi::tc_linear_scratch(16, 4096, 1024, 16, 8, true, abi::tc_x_budget(true, 16)).whole());
  EXPECT_TRUE(abi::tc_linear_scratch(32, 2048, 1024, 16, 8, true, abi::tc_x_budget(true, 32)).whole());
  for (bool chunk : {false, true})
    for (int64_t batch : {2, 3, 8, 16, 32, 40, 64, 128})  // above 16: a prefill chunk's rows
      for (int64_t K : {256, 2048, 4096, 8192, 12288})
        for (bool norm : {false, true}) {
          if (batch > kMaxBatch && !chunk) continue;
          SCOPED_TRACE(std::to_string(batch) + " x " + std::to_string(K) + (norm ? " normed" : "") +
                       (chunk ? ", chunk" : ""));
          const int64_t budget = abi::tc_x_budget(chunk, batch);
          const int64_t boxes = abi::tc_max_boxes(batch, K, norm, budget);
          ASSERT_GE(boxes, 1);
          const abi::TcLinearScratch s = abi::tc_linear_scratch(batch, K, boxes * 64, 64, 8, norm, budget);
          EXPECT_LE(s.partials - s.x, budget);
          EXPECT_EQ(s.whole(), (batch * (K + 8) + (norm ? K : 0)) * 2 <= budget);
          EXPECT_TRUE(s.whole() || s.slices >= 2);
          EXPECT_EQ(s.x % 16, 0);
          EXPECT_EQ(s.partials % 16, 0);
          EXPECT_GT(s.bytes, s.red);
          // Above kTcMaxRows rows no partials and one buffer of sums.
          const int64_t sums = 64 * batch * 4;
          EXPECT_EQ(s.red - s.partials, abi::tc_split_k(batch) ? (abi::kTcKSlices + 2) * sums : sums);
        }
}

// abi::attn_scratch: a decode attention's query heads, scores and m, then its V ring of
// 8 KiB tiles; codegen asks for the least ring (two tiles, one when every position fits
// one), and the device takes what the kernel's scratch holds beyond the task's own
// (abi::attn_ring_tiles): on the presets' long decodes, three tiles of a 256-position
// split of llama-3.2-1b's 64-wide heads, four of qwen3-8b's 128-wide ones.
TEST(MegakernelGen, DecodeAttentionRingTakesTheScratchBeyondItsOwn) {
  EXPECT_EQ(abi::attn_tile_positions(64), 64);
  EXPECT_EQ(abi::attn_tile_positions(128), 32);
  EXPECT_EQ(abi::attn_tile_positions(256), 16);
  EXPECT_EQ(abi::attn_scratch_tiles(64, 256, true), 4);
  EXPECT_EQ(abi::attn_scratch_tiles(64, 256, false), 2);
  EXPECT_EQ(abi::attn_scratch_tiles(64, 40, false), 1);
  for (int64_t hd : {64, 128, 256})
    for (int64_t g : {1, 2, 4, 8})
      for (int64_t rmax : {1, 40, 128, 256}) {
        SCOPED_TRACE(std::to_string(hd) + " x " + std::to_string(g) + " over " + std::to_string(rmax));
        const abi::AttnScratch one = abi::attn_scratch(hd, g, rmax, 1), three = abi::attn_scratch(hd, g, rmax, 3);
        EXPECT_EQ(one.tile_bytes, 8192);
        EXPECT_EQ(three.bytes - one.bytes, 2 * one.tile_bytes);
        EXPECT_EQ(three.tiles, 3);
        EXPECT_EQ(one.scores, g * hd * 4);
        EXPECT_EQ(one.ml - one.scores, g * one.score_row * 4);
        EXPECT_GE(one.score_row, rmax);
        EXPECT_EQ(one.score_row % 8, 0);
        EXPECT_EQ(one.v % 16, 0);
        // Within its bounds, as many tiles as the scratch holds.
        const int64_t least = abi::attn_scratch_tiles(hd, rmax, false), most = abi::attn_scratch_tiles(hd, rmax, true);
        for (int64_t scratch : {16384, 32768, 49152, 98304}) {
          const int64_t tiles = abi::attn_ring_tiles(hd, g, rmax, scratch, 1040);
          EXPECT_GE(tiles, least);
          EXPECT_LE(tiles, most);
          if (tiles > least) {
            EXPECT_LE(abi::attn_scratch(hd, g, rmax, tiles).bytes + 1040, scratch);
          }
          if (tiles < most) {
            EXPECT_GT(abi::attn_scratch(hd, g, rmax, tiles + 1).bytes + 1040, scratch);
          }
        }
      }
  // The presets over 2048 positions: 8 splits of 256, four query heads a partial task.
  const int64_t heads = abi::head_scratch_bytes(64, 4, false, 1), qheads = abi::head_scratch_bytes(128, 4, false, 1);
  const Megakernel llama = generate_megakernel(scheduled_preset("llama-3.2-1b", kDefaultPipeline, 1, 2048));
  EXPECT_EQ(abi::attn_ring_tiles(64, 4, 256, llama.scratch_bytes, heads), 3);
  const Megakernel qwen = generate_megakernel(scheduled_preset("qwen3-8b", kDefaultPipeline, 1, 2048));
  EXPECT_EQ(abi::attn_ring_tiles(128, 4, 256, qwen.scratch_bytes, qheads), 4);
  for (const Megakernel* k : {&llama, &qwen}) EXPECT_NE(k->source.find("task_attention_partial<"), std::string::npos);
}

TEST(MegakernelGen, CopiesInFlightAreCappedByTheRing) {
  const Module m = scheduled_preset("tiny");
  MegakernelOptions o;
  const Megakernel k = generate_megakernel(m, o);
  EXPECT_EQ(k.inflight, 1);  // the default
  EXPECT_NE(k.source.find("#define MPK_INFLIGHT 1\n"), std::string::npos);
  o.inflight = 3;
  EXPECT_EQ(generate_megakernel(m, o).inflight, 3);
  o.inflight = 0;  // one per slot
  const Megakernel all = generate_megakernel(m, o);
  EXPECT_EQ(all.inflight, all.stages);
  EXPECT_NE(all.source.find("#define MPK_INFLIGHT " + std::to_string(all.stages) + "\n"), std::string::npos);
  o.inflight = 1000;  // never more than the slots
  EXPECT_EQ(generate_megakernel(m, o).inflight, all.stages);
  o.inflight = -1;
  EXPECT_THROW(generate_megakernel(m, o), Error);
}

TEST(MegakernelGen, AttentionInstantiationsAndOnlyThemPrefetchIntoL2) {
  const Module m = scheduled_preset("tiny");
  MegakernelOptions o;
  const Megakernel k = generate_megakernel(m, o);
  ASSERT_EQ(k.prefetches.size(), k.instantiations.size());
  int attention = 0;
  for (size_t i = 0; i < k.instantiations.size(); ++i) {
    const bool is_attention = k.instantiations[i].rfind("task_attention<", 0) == 0 ||
                              k.instantiations[i].rfind("task_attention_partial<", 0) == 0;
    attention += is_attention;
    EXPECT_EQ(!k.prefetches[i].empty(), is_attention) << k.instantiations[i];
    if (is_attention) {
      EXPECT_NE(k.source.find("case " + std::to_string(i) + ": " + k.prefetches[i]), std::string::npos);
    }
  }
  EXPECT_GT(attention, 0);
  o.l2_prefetch = false;
  const Megakernel off = generate_megakernel(m, o);
  for (const std::string& p : off.prefetches) EXPECT_TRUE(p.empty()) << p;
  EXPECT_EQ(off.source.find("attention_prefetch"), std::string::npos);
}

TEST(MegakernelGen, TaskBodiesDoNotDependOnThePolicy) {
  const Module ma = scheduled_preset("tiny", "decompose,infer-deps,assign-sm{policy=round-robin}");
  const Module mb = scheduled_preset("tiny", "decompose,infer-deps,assign-sm{policy=critical-path}");
  const Megakernel a = generate_megakernel(ma), b = generate_megakernel(mb);
  // Each task runs the same instantiation; only the queues (and with them the groups)
  // differ.
  for (size_t t = 0; t < ma.graph.tasks.size(); ++t)
    EXPECT_EQ(a.instantiations[a.tasks[t].inst], b.instantiations[b.tasks[t].inst]) << "task " << t;
  EXPECT_NE(a.queue_items, b.queue_items);
}

TEST(MegakernelGen, PerOpLaunchesCoverEveryTaskInProgramOrder) {
  const Module m = scheduled_preset("tiny", "decompose{attention-splits=2},infer-deps,assign-sm");
  const Megakernel k = generate_megakernel(m);
  std::vector<int> seen(m.graph.tasks.size(), 0);
  OpId last_op = -1;
  bool saw_merge = false;
  for (const OpLaunch& l : k.op_launches) {
    ASSERT_FALSE(l.tasks.empty());
    const OpId op = m.graph.tasks[l.tasks[0]].op;
    EXPECT_GE(op, last_op);
    last_op = op;
    for (TaskId t : l.tasks) {
      EXPECT_EQ(m.graph.tasks[t].op, op);
      ++seen[t];
      if (m.graph.tasks[t].kind == TaskKind::kAttentionMerge) saw_merge = true;
    }
  }
  EXPECT_TRUE(saw_merge);
  for (int s : seen) EXPECT_EQ(s, 1);
}

// A prefill chunk (docs/ir.md "Prefill chunks"): its bodies take batch x chunk rows, its
// source compiles them for C rows per sequence (a decode's source says nothing of it), and
// an attention task over rows [r0, r1) of a sequence gets the chunk row r0 % C with its
// caches offset to that sequence.
TEST(MegakernelGen, PrefillChunkRowsAndPositions) {
  const std::string unfused_rows =
      "prefill-chunk{rows=16},decompose{attention-rows=4,attention-splits=1},infer-deps,assign-sm";
  const Megakernel k = generate_megakernel(scheduled_preset("tiny", unfused_rows));
  EXPECT_EQ(k.chunk, 16);
  EXPECT_EQ(k.batch, 1);
  EXPECT_NE(k.source.find("#define MPK_CHUNK 16\n"), std::string::npos);
  EXPECT_EQ(generate_megakernel(scheduled_preset("tiny")).source.find("MPK_CHUNK"), std::string::npos);
  const Module m = scheduled_preset("tiny", unfused_rows);
  std::set<int32_t> chunk_rows;
  for (TaskId t = 0; t < static_cast<TaskId>(m.graph.tasks.size()); ++t) {
    if (m.graph.tasks[t].kind != TaskKind::kAttention) continue;
    chunk_rows.insert(k.tasks[t].arg[abi::slots::Attention::kChunkRow0.index]);
    for (const Relocation& r : k.relocations) {
      if (r.task == t && r.slot == abi::slots::Attention::kKCache.index) {
        EXPECT_LT(r.byte_offset, 128 * 2);  // sequence 0
      }
    }
  }
  EXPECT_EQ(chunk_rows, (std::set<int32_t>{0, 4, 8, 12}));
  for (const std::string& call : k.instantiations) {
    if (call.rfind("task_rms_norm<", 0) == 0 || call.rfind("task_embedding<", 0) == 0) {
      EXPECT_NE(call.find(", 16>"), std::string::npos) << call;
    }
  }
}

TEST(MegakernelGen, RefusesPrefillChunksItCannotRun) {
  const auto refusal = [](const std::string& pipeline, int64_t batch) {
    try {
      generate_megakernel(scheduled_preset("tiny", pipeline, batch));
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(refusal(std::string("prefill-chunk{rows=4},") + kDefaultPipeline, 2).find("one sequence (batch 1) only"),
            std::string::npos);
  EXPECT_EQ(refusal(std::string("prefill-chunk{rows=128},") + kDefaultPipeline, 1), "no error");
  EXPECT_NE(refusal(std::string("prefill-chunk{rows=129},") + kDefaultPipeline, 1).find("129"), std::string::npos);
}

TEST(MegakernelGen, RejectsAnUnscheduledModule) {
  Module m = import_model("tiny", {});
  EXPECT_THROW(generate_megakernel(m), Error);
}

// Tensor parallel: a wait on an all_ranks event reads every rank's counter (peer 1..N),
// the others this rank's (peer 0); a trigger of an all_ranks event carries kTrigAllRanks
// (a system-scope release); the all_reduce tasks run task_all_reduce.
TEST(MegakernelGen, AllRanksEventsWaitOnEveryRanksCounter) {
  const Module m = scheduled_preset("tiny", "shard-tp{ranks=2}," + std::string(kDefaultPipeline));
  const Megakernel k = generate_megakernel(m);
  int ranked_waits = 0, ranked_trigs = 0;
  for (const abi::TaskDesc& d : k.tasks) {
    std::map<EventId, std::set<int32_t>> peers;
    for (int i = 0; i < d.wait_count; ++i) peers[wait_of(k, d, i).event].insert(wait_of(k, d, i).peer);
    for (const auto& [e, p] : peers) {
      const bool all = m.graph.events[e].all_ranks;
      const std::set<int32_t> expected = all ? std::set<int32_t>{1, 2} : std::set<int32_t>{0};
      EXPECT_EQ(p, expected) << "event " << e;
      ranked_waits += all;
    }
    for (int i = 0; i < d.trig_count; ++i) {
      const int32_t t = trigger_of(k, d, i);
      const EventId e = t & ~abi::kTrigAllRanks;
      EXPECT_EQ((t & abi::kTrigAllRanks) != 0, m.graph.events.at(e).all_ranks) << "event " << e;
      ranked_trigs += (t & abi::kTrigAllRanks) != 0;
    }
    if (d.task < static_cast<int32_t>(m.graph.tasks.size()) && m.graph.tasks[d.task].kind == TaskKind::kAllReduce) {
      EXPECT_EQ(k.instantiations.at(d.inst).rfind("task_all_reduce<", 0), 0u) << k.instantiations.at(d.inst);
    }
  }
  EXPECT_GT(ranked_waits, 0);
  EXPECT_GT(ranked_trigs, 0);
}

}  // namespace
}  // namespace mpk
