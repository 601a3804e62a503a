// Decode attention with grouped-query heads, in the CPU executor's exact order. One
// task serves G query heads of one KV head h (all nq/nkv of them, or fewer with
// decompose's attention-heads) over positions [t0, t1) of the cache (t1 <= pos + 1), each
// of its rows at its own sequence and position (positions.cuh; a prefill chunk's rows
// attend causally within their chunk). Per query head: scores s_t = scale * (q . k_t) (the dot
// ascending over the head dimension), m = max s_t, p_t = exp(s_t - m), l = sum p_t and
// o = sum p_t v_t ascending over t, then o / l. Scores are computed in parallel over
// (position, 16-byte piece), each K piece loaded once for the G heads; the sums run one
// chain per head (l) and per output element (o), over V staged through shared memory in
// tiles of kTile positions. The merge of
// partial tasks (attention_partial -> attention_merge) follows docs/ir.md: M = max m_s
// over non-empty splits, w_s = l_s exp(m_s - M), y = sum_s w_s o_s / sum_s w_s.
// An attention operator fused with its q/k norms, RoPE and KV append (fuse-attention)
// prepares its heads first (heads.cuh): its attention task norms and ropes the G query
// heads and the k head, appends k and v at pos (or leaves that to the kv_append task
// that follows it) and attends (position pos from shared memory); its partial tasks
// prepare their query heads (its kv_append tasks, before them, the k head). In a prefill
// chunk a fused attention task appends every row's k and v first, then attends row by
// row from the caches, since a row reads the rows before it in its chunk.
#pragma once

#include <cstdint>

#include "runtime/device/common.cuh"
#include "runtime/device/context.cuh"
#include "runtime/device/heads.cuh"
#include "runtime/device/lane_order.cuh"
#include "runtime/device/positions.cuh"

namespace mpk {
namespace dev {

// Shared memory of one attention task (abi::attn_scratch), RESERVE bytes after it for
// the task's own use: its V ring holds as many tiles as the kernel's scratch has room for,
// at least two and at most every tile of RMAX positions.
template <int HD, int G, int RMAX, int RESERVE = 0>
struct AttnScratch {
  static constexpr abi::AttnScratch kAt =
      abi::attn_scratch(HD, G, RMAX, abi::attn_ring_tiles(HD, G, RMAX, kScratchBytes, RESERVE));
  static constexpr int kTile = static_cast<int>(kAt.tile), kRow = static_cast<int>(kAt.score_row);
  static constexpr int kRing = static_cast<int>(kAt.tiles);
  static constexpr int kBytes = static_cast<int>(kAt.bytes);
  static_assert(kBytes + RESERVE <= kScratchBytes, "attention: scratch too small");
};

// The G query heads of batch row b (rows of NQ * HD) into qs (the start of the scratch,
// f32), as Attend expects them; ends with the body threads synchronized.
template <int HD, int G, int NQ>
__device__ __forceinline__ void load_q(const bf16_t* q, int b, unsigned char* scratch) {
  float* qs = reinterpret_cast<float*>(scratch);
#pragma unroll 4
  for (int u = threadIdx.x; u < G * HD; u += kThreads)
    qs[u] = bf16_to_f32(ld_cg_bf16(q + static_cast<int64_t>(b) * NQ * HD + u));
  body_sync();
}

// N (1, 2, 4 or 8) adjacent bf16 values from shared memory, aligned to 2N bytes, as f32.
template <int N>
__device__ __forceinline__ void bf16_row(const bf16_t* src, float (&f)[N]) {
  static_assert(N == 1 || N == 2 || N == 4 || N == 8, "bf16_row: 1, 2, 4 or 8 values");
  if constexpr (N == 8) {
    unpack8(*reinterpret_cast<const uint4*>(src), f);
  } else if constexpr (N == 4) {
    const uint2 w = *reinterpret_cast<const uint2*>(src);
    f[0] = bf16_lo(w.x), f[1] = bf16_hi(w.x), f[2] = bf16_lo(w.y), f[3] = bf16_hi(w.y);
  } else if constexpr (N == 2) {
    const uint32_t w = *reinterpret_cast<const uint32_t*>(src);
    f[0] = bf16_lo(w), f[1] = bf16_hi(w);
  } else {
    f[0] = bf16_to_f32(*src);
  }
}

// Where a fused attention's heads come from (heads.cuh), from its tasks' slots
// (slots::Attention): raw q (rows of NQ heads), k and v, the RoPE table, the q / k norm
// weights, the caches.
template <int HD, int NQ, int NKV>
__device__ __forceinline__ HeadIo fused_heads(const TaskDesc& d) {
  using Slot = slots::Attention;
  return HeadIo{dptr<const bf16_t>(d, Slot::kQ),     dptr<const bf16_t>(d, Slot::kK),
                dptr<const bf16_t>(d, Slot::kV),     dptr<const bf16_t>(d, Slot::kQNorm),
                dptr<const bf16_t>(d, Slot::kKNorm), dptr<const float2>(d, Slot::kRopeTable),
                dptr<bf16_t>(d, Slot::kKCache),      dptr<bf16_t>(d, Slot::kVCache),
                NQ * HD,                             NKV * HD};
}

// The attention of batch row b's G heads over the cache positions [t0, t1) (at most
// RMAX), in two phases so that its cache loads overlap the preparing of the query heads:
// issue() requests the first K pieces and the V ring's tiles (cp.async, one group a
// tile), run() computes. Position cur (relative to t0; -1: none) comes from shared memory
// instead of the cache (HeadScratch::current: k [HD] then v [HD]), the fused attention's
// own append, whose store it need not wait for. RESERVE: the bytes the task keeps after
// the scratch (AttnScratch).
template <int HD, int G, int S, int NKV, int RMAX, int RESERVE>
struct Attend {
  static_assert(HD % 8 == 0, "attention: head_dim must be a multiple of 8");
  static_assert(G <= kWarps, "attention: more query heads per KV head than warps");
  using Sh = AttnScratch<HD, G, RMAX, RESERVE>;
  static constexpr int L = HD / 8;  // 16-byte pieces of a head
  // Where L is a power of two, the L threads of one position share its K pieces, and the
  // canonical tree of a score's pieces is a shuffle butterfly (the tree's padding adds
  // only zeros); each thread requests kBatch pieces at once.
  static constexpr bool kShuffle = (L & (L - 1)) == 0 && L <= 32;
  static constexpr int kBatch = 8;
  const bf16_t* kc;
  const bf16_t* vc;
  bf16_t* vt;  // the V ring
  int64_t row0;
  int n, cur;
  uint4 kr[kBatch];

  __device__ Attend(const bf16_t* k_cache, const bf16_t* v_cache, int b, int t0, int t1, int current,
                    unsigned char* scratch)
      : kc(k_cache),
        vc(v_cache),
        vt(reinterpret_cast<bf16_t*>(scratch + Sh::kAt.v)),
        row0(static_cast<int64_t>(b) * S + t0),
        n(t1 > t0 ? t1 - t0 : 0),
        cur(current) {}

  __device__ __forceinline__ uint4 piece(const bf16_t* cache, int t, int p) const {
    return ld_cg_v4(cache + (row0 + t) * NKV * HD + p * 8);
  }
  __device__ __forceinline__ void load_k(int base) {
#pragma unroll
    for (int j = 0; j < kBatch; ++j) {
      const int u = base + j * kThreads + threadIdx.x;
      if (u < n * L && u / L != cur) kr[j] = piece(kc, u / L, u % L);
    }
  }
  // V tile i (positions from i * kTile) into its ring slot, as one cp.async group (empty
  // past n; position cur is left to run()).
  __device__ __forceinline__ void stage_v(int i) {
    const int tile = i * Sh::kTile, cnt = min(Sh::kTile, n - tile);
    bf16_t* slot = vt + (i % Sh::kRing) * Sh::kTile * HD;
    for (int v = threadIdx.x; v < cnt * L; v += kThreads)
      if (tile + v / L != cur) cp_async16(slot + v * 8, vc + (row0 + tile + v / L) * NKV * HD + v % L * 8);
    cp_async_commit();
  }
  __device__ __forceinline__ void issue() {
    if constexpr (kShuffle) load_k(0);
#pragma unroll 1
    for (int i = 0; i < Sh::kRing; ++i) stage_v(i);
  }

  // Piece p of the G query heads (f32, in shared memory at qs) into registers.
  __device__ __forceinline__ static void query_piece(const float* qs, int p, float (&q)[G][8]) {
#pragma unroll
    for (int g = 0; g < G; ++g)
#pragma unroll
      for (int e = 0; e < 8; ++e) q[g][e] = qs[g * HD + p * 8 + e];
  }
  // The G dots of a k piece (kf) with the query heads' same piece, each its 8 products
  // left to right.
  __device__ __forceinline__ static void piece_dots(const float (&q)[G][8], const float (&kf)[8], float (&l)[G]) {
#pragma unroll
    for (int g = 0; g < G; ++g) {
      l[g] = __fmul_rn(q[g][0], kf[0]);
#pragma unroll
      for (int e = 1; e < 8; ++e) l[g] = fmaf(q[g][e], kf[e], l[g]);
    }
  }

  // Scores s_t = scale * (q . k_t) into sc [G][kRow], the dot in the canonical order:
  // piece j of the head sums its 8 products left to right, the pieces add in
  // thread_lane_tree's tree.
  __device__ __forceinline__ void scores(const float* qs, float scale, const bf16_t* cs, float* sc) {
    if constexpr (kShuffle) {
      static_assert(kThreads % L == 0, "attention: a thread's pieces must be one piece of the head");
      const int units = n * L, p = threadIdx.x % L;
      float q[G][8];  // every unit of this thread is piece p: its query pieces stay in registers
      query_piece(qs, p, q);
#pragma unroll 1
      for (int base = 0; base < units; base += kThreads * kBatch) {
        if (base > 0) load_k(base);
#pragma unroll
        for (int j = 0; j < kBatch; ++j) {
          if (base + j * kThreads >= units) break;  // the same for every thread
          const int u = base + j * kThreads + threadIdx.x;  // groups of L threads: all in or all out
          const int t = u / L;
          float l[G];
#pragma unroll
          for (int g = 0; g < G; ++g) l[g] = 0.f;
          if (u < units) {
            float kf[8];
            uint4 k = kr[j];  // chosen by value: `?:` between two places put kr in local memory
            if (t == cur) k = *reinterpret_cast<const uint4*>(cs + p * 8);
            unpack8(k, kf);
            piece_dots(q, kf, l);
          }
#pragma unroll
          for (int g = 0; g < G; ++g) {
#pragma unroll
            for (int off = L / 2; off >= 1; off >>= 1) l[g] = __fadd_rn(l[g], __shfl_xor_sync(0xffffffffu, l[g], off));
          }
          if (u < units && p == 0) {
#pragma unroll
            for (int g = 0; g < G; ++g) sc[g * Sh::kRow + t] = __fmul_rn(scale, l[g]);
          }
        }
      }
    } else {
      for (int t = threadIdx.x; t < n; t += kThreads) {
        float lanes[G][L];  // one thread per position
#pragma unroll
        for (int p = 0; p < L; ++p) {
          float kf[8], q[G][8], l[G];
          unpack8(t == cur ? *reinterpret_cast<const uint4*>(cs + p * 8) : piece(kc, t, p), kf);
          query_piece(qs, p, q);
          piece_dots(q, kf, l);
#pragma unroll
          for (int g = 0; g < G; ++g) lanes[g][p] = l[g];
        }
#pragma unroll
        for (int g = 0; g < G; ++g) sc[g * Sh::kRow + t] = __fmul_rn(scale, thread_lane_tree(lanes[g]));
      }
    }
  }

  // Attends with the roped query heads in qs (the start of the scratch, f32); cs is
  // position cur's k and v (unused when cur < 0). Calls out(g, i, o_i, m, l) for each
  // head g and element i, o normalized (o = 0, m = -inf, l = 0 when the range is empty);
  // ends with the body threads synchronized.
  template <class Out>
  __device__ __forceinline__ void run(float scale, const bf16_t* cs, unsigned char* scratch, Out out) {
    const float* qs = reinterpret_cast<const float*>(scratch + Sh::kAt.q);
    float* sc = reinterpret_cast<float*>(scratch + Sh::kAt.scores);
    float* ml = reinterpret_cast<float*>(scratch + Sh::kAt.ml);  // m[G]
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    scores(qs, scale, cs, sc);
    body_sync();
    if (warp < G) {  // the maximum (exact in any order)
      float m = -INFINITY;
      for (int t = lane; t < n; t += 32) m = fmaxf(m, sc[warp * Sh::kRow + t]);
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
      if (lane == 0) ml[warp] = m;
    }
    body_sync();
    for (int u = threadIdx.x; u < G * n; u += kThreads) {
      const int g = u / n, t = u % n;
      sc[g * Sh::kRow + t] = exp_rn(__fsub_rn(sc[g * Sh::kRow + t], ml[g]));
    }
    body_sync();
    // o = sum p_t v_t and l = sum p_t ascending over t, one chain per (head, element):
    // thread i runs the chains of the kE adjacent elements from i * kE (one head) and
    // that head's l alongside; V tiles come through the ring, kRing of them in flight
    // (a tile's slot is refilled, kRing tiles ahead, once its sums are done); the chains
    // take 8 positions at a time, their scores and V rows loaded first, the scores as two
    // 16-byte vectors.
    constexpr int kE = G * HD <= kThreads ? 1 : G * HD <= 2 * kThreads ? 2 : G * HD <= 4 * kThreads ? 4 : 8;
    static_assert(G * HD <= 8 * kThreads, "attention: more than 8 output elements per thread");
    const int u0 = threadIdx.x * kE, g = u0 / HD, i0 = u0 % HD;
    const bool mine = u0 < G * HD;
    float o[kE], l = 0.f;
#pragma unroll
    for (int e = 0; e < kE; ++e) o[e] = 0.f;
#pragma unroll 1
    for (int i = 0, tile = 0; tile < n; ++i, tile += Sh::kTile) {
      const int cnt = min(Sh::kTile, n - tile);
      bf16_t* vs = vt + (i % Sh::kRing) * Sh::kTile * HD;
      cp_async_wait<Sh::kRing - 1>();  // tile i's group: one group a tile, in order
      if (cur >= tile && cur < tile + cnt)
        for (int p = threadIdx.x; p < L; p += kThreads)
          *reinterpret_cast<uint4*>(vs + (cur - tile) * HD + p * 8) =
              *reinterpret_cast<const uint4*>(cs + HD + p * 8);
      body_sync();
      if (mine) {
#pragma unroll 1
        for (int t0 = 0; t0 < cnt; t0 += 8) {  // rows past cnt are read (in bounds), never used
          const float* pg = sc + g * Sh::kRow + tile + t0;
          const float4 pa = *reinterpret_cast<const float4*>(pg), pb = *reinterpret_cast<const float4*>(pg + 4);
          const float pw[8] = {pa.x, pa.y, pa.z, pa.w, pb.x, pb.y, pb.z, pb.w};
          float vw[8][kE];
#pragma unroll
          for (int e = 0; e < 8; ++e) bf16_row<kE>(vs + (t0 + e) * HD + i0, vw[e]);
#pragma unroll
          for (int e = 0; e < 8; ++e) {
            if (t0 + e >= cnt) break;
#pragma unroll
            for (int k = 0; k < kE; ++k) o[k] = __fadd_rn(o[k], __fmul_rn(pw[e], vw[e][k]));
            l = __fadd_rn(l, pw[e]);
          }
        }
      }
      body_sync();
      stage_v(i + Sh::kRing);
    }
    if (mine) {
#pragma unroll
      for (int k = 0; k < kE; ++k) out(g, i0 + k, n > 0 ? __fdiv_rn(o[k], l) : 0.f, ml[g], l);
    }
    body_sync();
  }
};

// The dispatch warp's L2 prefetch for an attention task of B rows (SPLITS > 0: a partial
// task, one of SPLITS, its positions following the step) at a step whose first position
// is `pos0` (positions.cuh, step_first_pos), issued before its event waits: the cache
// rows of the positions before pos0, which earlier steps wrote, of the task's sequences,
// so that the task's loads find them in L2. A prefetch is a hint and L2 is the point of
// coherence: it cannot make a load stale.
template <int HD, int B, int S, int NKV, int SPLITS>
__device__ __forceinline__ void attention_prefetch(const TaskDesc& d, int32_t pos0, int lane) {
  using Slot = slots::Attention;
  const PosRange split = SPLITS > 0 ? attention_split(pos0, arg_int(d, Slot::kSplit), SPLITS, S) : PosRange{0, S};
  const int t0 = split.lo, t1 = min(split.hi, min(pos0, S));
  const char* kc = dptr<const char>(d, Slot::kKCache);
  const char* vc = dptr<const char>(d, Slot::kVCache);
  const int seqs = kChunk == 1 ? B : (arg_int(d, Slot::kChunkRow0) + B - 1) / kChunk + 1;
#pragma unroll 1
  for (int b = 0; b < seqs; ++b)
#pragma unroll 1
    for (int t = t0 + lane; t < t1; t += 32) {
      const int64_t off = (static_cast<int64_t>(b) * S + t) * NKV * HD * 2;
      prefetch_l2(kc + off, HD * 2);
      prefetch_l2(vc + off, HD * 2);
    }
}

// G query heads j0.. of one kv head h (NQ query heads in all) for B rows, slots::
// Attention: q rows of NQ*HD, kOut = y + j0*HD. Row b attends positions [0, pos] of its
// sequence (positions.cuh). FUSED (an attention that norms and ropes its heads; EPS_BITS
// != 0 with q/k norms): q is raw, k, v, the RoPE table and the norm weights as
// fused_heads reads them, and position pos's k and v are prepared here and read from
// shared memory; APPEND: they are also stored into the caches (else the operator's
// kv_append tasks store them, after this task). The cache loads of the positions before
// pos overlap the preparing of the heads. In a prefill chunk (kChunk > 1) a fused
// attention appends (decompose gives its tasks whole groups and sequences): every row's k
// and v go to the caches first, then each row attends from the caches alone.
template <int HD, int G, int B, int S, int NKV, int NQ, bool FUSED, int EPS_BITS, bool APPEND>
__device__ void task_attention(const TaskDesc& d, TaskCtx& c) {
  using Hs = HeadScratch<HD, G, true>;
  constexpr bool kAppendFirst = kChunk > 1 && FUSED;
  // After the scratch: the heads' (with a chunk's, every row's k and v to append).
  constexpr int64_t kChunkHeads = abi::head_scratch_bytes(HD, 0, true, abi::head_prep_rows(HD, 1, B, kThreads));
  constexpr int kHeads = !FUSED ? 0 : kAppendFirst && kChunkHeads > Hs::kBytes ? static_cast<int>(kChunkHeads) : Hs::kBytes;
  using Sh = AttnScratch<HD, G, S, kHeads>;
  static_assert(FUSED || !APPEND, "attention: only a fused attention appends");
  static_assert(kChunk == 1 || !FUSED || APPEND, "attention: a prefill chunk's fused attention appends its rows");
  constexpr int kQStride = NQ * HD;
  using Slot = slots::Attention;
  bf16_t* y = dptr<bf16_t>(d, Slot::kOut);
  const int32_t row0 = kChunk == 1 ? 0 : arg_int(d, Slot::kChunkRow0);
  unsigned char* heads = c.scratch + Sh::kBytes;
  if constexpr (kAppendFirst) append_heads<HD, B, S, NKV, EPS_BITS>(fused_heads<HD, NQ, NKV>(d), *c.params, c.step, row0, heads);
#pragma unroll 1
  for (int b = 0; b < B; ++b) {
    const RowPos pos = row_pos(*c.params, c.step, row0 + b);
    Attend<HD, G, S, NKV, S, kHeads> at(dptr<const bf16_t>(d, Slot::kKCache), dptr<const bf16_t>(d, Slot::kVCache),
                                        pos.seq, 0, min(pos.pos + 1, S),
                                        FUSED && !kAppendFirst && pos.pos < S ? pos.pos : -1, c.scratch);
    at.issue();
    if constexpr (FUSED) {
      HeadPrep<HD, G, S, NKV, EPS_BITS, !kAppendFirst, APPEND && !kAppendFirst> prep;
      const HeadIo io = fused_heads<HD, NQ, NKV>(d);
      const auto row_at = [&](int) { return pos; };
      prep.issue(io, b, 1, row_at);
      prep.finish(io, 1, row_at, reinterpret_cast<float*>(c.scratch), heads);
    } else {
      load_q<HD, G, NQ>(dptr<const bf16_t>(d, Slot::kQ), b, c.scratch);
    }
    at.run(arg_float(d, Slot::kScale), Hs::current(heads), c.scratch, [&](int g, int i, float o, float, float) {
      y[static_cast<int64_t>(b) * kQStride + g * HD + i] = f32_to_bf16(o);
    });
  }
}

// A prefill chunk's partial task (kChunk > 1): its rows over its split [s0, s1) of the
// step's positions (attention_split), in
// groups of R rows (abi::attn_rows_scratch) attended together, in Attend's order (the
// same bits). One round trip brings a group's raw query heads (with a fused attention's
// RoPE rows and q norm weight) and the split's first K and V tiles into shared memory
// (cp.async: no registers held); the heads are then normed and roped there as HeadPrep
// does. Each warp takes kQB query heads (row r, head g) at a time, side by side (one load
// of a K or V row for all of them), one position a lane: the scores (each dot as
// thread_lane_tree sums its pieces), their maximum and exponentials; then lane l runs o
// of elements l, l + 32, ... and l ascending over the positions, carried from tile to
// tile in shared memory (in the query heads' place). A group whose
// positions all lie before s0 writes empty partials (o = 0, m = -inf, l = 0) at once.
template <int HD, int G, int B, int S, int NKV, int SPLITS, int RMAX, bool FUSED, int EPS_BITS>
struct AttendRows {
  static constexpr abi::AttnRowsScratch kAt = abi::attn_rows_scratch(HD, G, B, RMAX, FUSED);
  static constexpr int R = static_cast<int>(kAt.rows), L = HD / 8, E = (HD + 31) / 32, kHalf = HD / 2;
  static constexpr int kTile = static_cast<int>(kAt.tile), kTileRow = static_cast<int>(kAt.tile_row);
  static constexpr int kScoreRow = static_cast<int>(kAt.score_row);
  static constexpr int kQB = 4;  // query heads a warp runs side by side
  static constexpr int64_t kPartRow = static_cast<int64_t>(NKV) * G * SPLITS * (HD + 2);
  static_assert(kAt.bytes <= kScratchBytes, "attention: scratch too small");
  static_assert(L <= 32 && HD % 8 == 0, "attention: head_dim a multiple of 8, at most 256");
  using Slot = slots::Attention;

  // Positions [t0, t0 + n) of sequence seq's cache (k or v) into a tile, asynchronously.
  __device__ static void stage(const bf16_t* cache, int seq, int t0, int n, bf16_t* tile) {
    for (int u = threadIdx.x; u < n * L; u += kThreads)
      cp_async16(tile + u / L * kTileRow + u % L * 8,
                 cache + (static_cast<int64_t>(seq) * S + t0 + u / L) * NKV * HD + u % L * 8);
  }
  // The same, waited for (this thread's copies; the caller synchronizes the body).
  __device__ static void load(const bf16_t* cache, int seq, int t0, int n, bf16_t* tile) {
    stage(cache, seq, t0, n, tile);
    cp_async_commit();
    cp_async_wait<0>();
  }

  __device__ static void run(const TaskDesc& d, TaskCtx& c) {
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int32_t row0 = arg_int(d, Slot::kChunkRow0);
    const PosRange split = attention_split(step_first_pos(*c.params, c.step), arg_int(d, Slot::kSplit), SPLITS, S);
    const int s0 = split.lo, s1 = split.hi;
    const float scale = arg_float(d, Slot::kScale);
    const bf16_t* kc = dptr<const bf16_t>(d, Slot::kKCache);
    const bf16_t* vc = dptr<const bf16_t>(d, Slot::kVCache);
    const HeadIo io = fused_heads<HD, NKV * G, NKV>(d);  // q: raw, or roped (not FUSED)
    float* part = dptr<float>(d, Slot::kOut);
    float* qs = reinterpret_cast<float*>(c.scratch + kAt.q);  // [R * G][HD]
    float* sc = reinterpret_cast<float*>(c.scratch + kAt.scores);  // [R * G][kScoreRow]
    float* ml = reinterpret_cast<float*>(c.scratch + kAt.ml);  // m [R * G], then l [R * G]
    bf16_t* kt = reinterpret_cast<bf16_t*>(c.scratch + kAt.k);
    bf16_t* vt = reinterpret_cast<bf16_t*>(c.scratch + kAt.v);
    bf16_t* raw = reinterpret_cast<bf16_t*>(c.scratch + kAt.raw);  // [R * G][HD]
    float2* rope = reinterpret_cast<float2*>(c.scratch + kAt.rope);  // [R][kHalf]
    bf16_t* qw = reinterpret_cast<bf16_t*>(c.scratch + kAt.norm);
    float* rs = reinterpret_cast<float*>(c.scratch + kAt.scales);  // [R * G]
#pragma unroll 1
    for (int b0 = 0; b0 < B;) {
      // The group: up to R rows of one sequence.
      const int seq = row_pos(*c.params, c.step, row0 + b0).seq;
      int n = 1;
      while (n < R && b0 + n < B && row_pos(*c.params, c.step, row0 + b0 + n).seq == seq) ++n;
      const auto at = [&](int r) { return row_pos(*c.params, c.step, row0 + b0 + r); };
      const auto count = [&](int r) { return max(0, min(s1, at(r).pos + 1) - s0); };  // row r's positions
      int cnt = 0;
      for (int r = 0; r < n; ++r) cnt = max(cnt, count(r));
      if (cnt == 0) {
        for (int u = threadIdx.x; u < n * G * (HD + 2); u += kThreads) {
          const int r = u / (G * (HD + 2)), g = u / (HD + 2) % G, i = u % (HD + 2);
          part[(b0 + r) * kPartRow + g * SPLITS * (HD + 2) + i] = i == HD ? -INFINITY : 0.f;
        }
        b0 += n;
        continue;
      }
      // One round trip: the raw heads (RoPE rows, norm weight) and the first tiles.
      for (int u = threadIdx.x; u < n * G * L; u += kThreads)
        cp_async16(raw + u * 8, io.q + (b0 + u / (G * L)) * io.qstride + u % (G * L) * 8);
      if constexpr (FUSED) {
        for (int u = threadIdx.x; u < n * kHalf / 2; u += kThreads)
          cp_async16(rope + u * 2, io.rope + static_cast<int64_t>(min(at(u / (kHalf / 2)).pos, S - 1)) * kHalf +
                                       u % (kHalf / 2) * 2);
        if constexpr (EPS_BITS != 0)
          for (int u = threadIdx.x; u < L; u += kThreads) cp_async16(qw + u * 8, io.qw + u * 8);
      }
      stage(kc, seq, s0, min(kTile, cnt), kt);
      stage(vc, seq, s0, min(kTile, cnt), vt);
      cp_async_commit();
      cp_async_wait<0>();
      body_sync();
      // The query heads: normed (the head's rms scale by one thread) and roped, as HeadPrep
      // stores them; or as they are.
      if constexpr (FUSED) {
        if constexpr (EPS_BITS != 0) {
          for (int h = threadIdx.x; h < n * G; h += kThreads)
            rs[h] = head_rms_scale<HD>([&](int i) { return bf16_to_f32(raw[h * HD + i]); }, __int_as_float(EPS_BITS));
          body_sync();
        }
        for (int u = threadIdx.x; u < n * G * kHalf; u += kThreads) {
          const int h = u / kHalf, i = u % kHalf;
          float a = bf16_to_f32(raw[h * HD + i]), b = bf16_to_f32(raw[h * HD + i + kHalf]);
          if constexpr (EPS_BITS != 0) {
            a = normed(a, rs[h], bf16_to_f32(qw[i]));
            b = normed(b, rs[h], bf16_to_f32(qw[i + kHalf]));
          }
          bf16_t y0, y1;
          rope_rotate(a, b, rope[h / G * kHalf + i], y0, y1);
          qs[h * HD + i] = bf16_to_f32(y0);
          qs[h * HD + i + kHalf] = bf16_to_f32(y1);
        }
      } else {
        for (int u = threadIdx.x; u < n * G * HD; u += kThreads) qs[u] = bf16_to_f32(raw[u]);
      }
      body_sync();
      // The scores, K tile by K tile.
#pragma unroll 1
      for (int t0 = 0; t0 < cnt; t0 += kTile) {
        if (t0 > 0) {
          load(kc, seq, s0 + t0, min(kTile, cnt - t0), kt);
          body_sync();
        }
#pragma unroll 1
        for (int q0 = warp; q0 < n * G; q0 += kQB * kWarps) {  // kQB heads at once: one K load each
          int end[kQB];
#pragma unroll
          for (int k = 0; k < kQB; ++k) {
            const int q = q0 + k * kWarps;
            end[k] = q < n * G ? min(count(q / G), t0 + kTile) : 0;
          }
          int last = end[0];
#pragma unroll
          for (int k = 1; k < kQB; ++k) last = max(last, end[k]);
          for (int t = t0 + lane; t < last; t += 32) {
            const bf16_t* kr = kt + (t - t0) * kTileRow;
            float lanes[kQB][L];
#pragma unroll
            for (int p = 0; p < L; ++p) {
              float kf[8];
              unpack8(*reinterpret_cast<const uint4*>(kr + p * 8), kf);
#pragma unroll
              for (int k = 0; k < kQB; ++k) {
                const float* qh = qs + min(q0 + k * kWarps, n * G - 1) * HD + p * 8;
                float l = __fmul_rn(qh[0], kf[0]);
#pragma unroll
                for (int e = 1; e < 8; ++e) l = fmaf(qh[e], kf[e], l);
                lanes[k][p] = l;
              }
            }
#pragma unroll
            for (int k = 0; k < kQB; ++k)
              if (t < end[k]) sc[(q0 + k * kWarps) * kScoreRow + t] = __fmul_rn(scale, thread_lane_tree(lanes[k]));
          }
        }
        body_sync();
      }
      // Each head's maximum (exact in any order) and exponentials, by its warp; its o
      // (in its query's place, no longer needed) and l start at 0.
#pragma unroll 1
      for (int q = warp; q < n * G; q += kWarps) {
        const int nq = count(q / G);
        float m = -INFINITY;
        for (int t = lane; t < nq; t += 32) m = fmaxf(m, sc[q * kScoreRow + t]);
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
        for (int t = lane; t < nq; t += 32) sc[q * kScoreRow + t] = exp_rn(__fsub_rn(sc[q * kScoreRow + t], m));
        for (int i = lane; i < HD; i += 32) qs[q * HD + i] = 0.f;
        if (lane == 0) ml[q] = m, ml[R * G + q] = 0.f;
      }
      // o and l ascending over the positions, V tile by V tile.
#pragma unroll 1
      for (int t0 = 0; t0 < cnt; t0 += kTile) {
        if (t0 > 0) load(vc, seq, s0 + t0, min(kTile, cnt - t0), vt);
        body_sync();
#pragma unroll 1
        for (int q0 = warp; q0 < n * G; q0 += kQB * kWarps) {  // kQB heads at once: one V load each
          int end[kQB];
          float o[kQB][E], l[kQB];
#pragma unroll
          for (int k = 0; k < kQB; ++k) {
            const int q = q0 + k * kWarps;
            end[k] = q < n * G ? min(count(q / G), t0 + kTile) : 0;
            l[k] = q < n * G ? ml[R * G + q] : 0.f;
#pragma unroll
            for (int e = 0; e < E; ++e) o[k][e] = q < n * G && lane + 32 * e < HD ? qs[q * HD + lane + 32 * e] : 0.f;
          }
          int last = end[0];
#pragma unroll
          for (int k = 1; k < kQB; ++k) last = max(last, end[k]);
#pragma unroll 2
          for (int t = t0; t < last; ++t) {
            const bf16_t* vr = vt + (t - t0) * kTileRow;
            float v[E];
#pragma unroll
            for (int e = 0; e < E; ++e) v[e] = lane + 32 * e < HD ? bf16_to_f32(vr[lane + 32 * e]) : 0.f;
#pragma unroll
            for (int k = 0; k < kQB; ++k) {
              if (t >= end[k]) continue;
              const float pt = sc[(q0 + k * kWarps) * kScoreRow + t];
#pragma unroll
              for (int e = 0; e < E; ++e) o[k][e] = __fadd_rn(o[k][e], __fmul_rn(pt, v[e]));
              l[k] = __fadd_rn(l[k], pt);
            }
          }
#pragma unroll
          for (int k = 0; k < kQB; ++k) {
            const int q = q0 + k * kWarps;
            if (q >= n * G) continue;
#pragma unroll
            for (int e = 0; e < E; ++e)
              if (lane + 32 * e < HD) qs[q * HD + lane + 32 * e] = o[k][e];
          }
          __syncwarp();  // every lane has read l before lane 0 replaces it
#pragma unroll
          for (int k = 0; k < kQB; ++k) {
            const int q = q0 + k * kWarps;
            if (lane == 0 && q < n * G) ml[R * G + q] = l[k];
          }
        }
        body_sync();
      }
#pragma unroll 1
      for (int q = warp; q < n * G; q += kWarps) {
        const float l = ml[R * G + q];
        float* dst = part + (b0 + q / G) * kPartRow + static_cast<int64_t>(q % G) * SPLITS * (HD + 2);
        for (int i = lane; i < HD; i += 32) dst[i] = count(q / G) > 0 ? __fdiv_rn(qs[q * HD + i], l) : 0.f;
        if (lane == 0) dst[HD] = ml[q], dst[HD + 1] = l;
      }
      body_sync();
      b0 += n;
    }
  }
};

// As task_attention over its split [s0, s1) ∩ [0, pos] (attention_split; s1 - s0 <= RMAX);
// kOut: attn_part + (h*G*SPLITS + s)*(HD+2) of attn_part [B, NQ, SPLITS, HD+2] (f32).
// FUSED: q is raw and prepared here (its k and v were appended by the operator's
// kv_append tasks). A prefill chunk's rows attend together (AttendRows).
template <int HD, int G, int B, int S, int NKV, int SPLITS, int RMAX, bool FUSED, int EPS_BITS>
__device__ void task_attention_partial(const TaskDesc& d, TaskCtx& c) {
  if constexpr (kChunk > 1) {
    AttendRows<HD, G, B, S, NKV, SPLITS, RMAX, FUSED, EPS_BITS>::run(d, c);
  } else {
    constexpr int kHeads = FUSED ? HeadScratch<HD, G, false>::kBytes : 0;
    using Sh = AttnScratch<HD, G, RMAX, kHeads>;
    constexpr int64_t kPartRow = static_cast<int64_t>(NKV) * G * SPLITS * (HD + 2);
    using Slot = slots::Attention;
    float* part = dptr<float>(d, Slot::kOut);
    const PosRange split = attention_split(step_first_pos(*c.params, c.step), arg_int(d, Slot::kSplit), SPLITS, S);
#pragma unroll 1
    for (int b = 0; b < B; ++b) {
      const RowPos pos = row_pos(*c.params, c.step, b);
      Attend<HD, G, S, NKV, RMAX, kHeads> at(dptr<const bf16_t>(d, Slot::kKCache), dptr<const bf16_t>(d, Slot::kVCache),
                                             pos.seq, split.lo, min(split.hi, pos.pos + 1), -1, c.scratch);
      at.issue();
      if constexpr (FUSED) {
        HeadPrep<HD, G, S, NKV, EPS_BITS, false> prep;
        const HeadIo io = fused_heads<HD, NKV * G, NKV>(d);
        const auto row_at = [&](int) { return pos; };
        prep.issue(io, b, 1, row_at);
        prep.finish(io, 1, row_at, reinterpret_cast<float*>(c.scratch), c.scratch + Sh::kBytes);
      } else {
        load_q<HD, G, NKV * G>(dptr<const bf16_t>(d, Slot::kQ), b, c.scratch);
      }
      at.run(arg_float(d, Slot::kScale), nullptr, c.scratch, [&](int g, int i, float o, float m, float l) {
        float* dst = part + b * kPartRow + static_cast<int64_t>(g) * SPLITS * (HD + 2);
        dst[i] = o;
        if (i == 0) {
          dst[HD] = m;
          dst[HD + 1] = l;
        }
      });
    }
  }
}

// slots::AttentionMerge: attn_part + h*G*SPLITS*(HD+2); y + h*G*HD (rows of NQ*HD). A
// warp takes one (row, head, 32 elements) at a time: lane s loads split s's (m, l) (32
// splits a round), computes the weight w_s = l_s exp(m_s - M) of a non-empty split, and
// every lane adds the weights in split order; then lane i sums w_s o_s of its element in
// split order, the loads of up to 16 non-empty splits' o in flight at once.
template <int HD, int G, int B, int NKV, int SPLITS>
__device__ void task_attention_merge(const TaskDesc& d, TaskCtx& c) {
  constexpr int kQStride = NKV * G * HD;
  constexpr int64_t kPartRow = static_cast<int64_t>(NKV) * G * SPLITS * (HD + 2);
  constexpr int kRounds = (SPLITS + 31) / 32, kSlices = (HD + 31) / 32;
  constexpr int kGroup = SPLITS < 16 ? SPLITS : 16;
  const float* part = dptr<const float>(d, slots::AttentionMerge::kPart);
  bf16_t* y = dptr<bf16_t>(d, slots::AttentionMerge::kY);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
#pragma unroll 1
  for (int u = warp; u < B * G * kSlices; u += kWarps) {
    const int b = u / (G * kSlices), g = u / kSlices % G, i = u % kSlices * 32 + lane;
    const float* ps = part + b * kPartRow + static_cast<int64_t>(g) * SPLITS * (HD + 2);
    float m[kRounds], w[kRounds];
    uint32_t live[kRounds];
    float big = -INFINITY;
#pragma unroll
    for (int r = 0; r < kRounds; ++r) {
      const int s = 32 * r + lane;
      m[r] = -INFINITY, w[r] = 0.f;
      if (s < SPLITS) m[r] = ld_cg_f32(&ps[s * (HD + 2) + HD]), w[r] = ld_cg_f32(&ps[s * (HD + 2) + HD + 1]);
      live[r] = __ballot_sync(0xffffffffu, w[r] > 0.f);  // an empty split contributes nothing
      if (w[r] > 0.f) big = fmaxf(big, m[r]);
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) big = fmaxf(big, __shfl_xor_sync(0xffffffffu, big, o));
    float den = 0.f, num = 0.f;
#pragma unroll
    for (int r = 0; r < kRounds; ++r) {
      if (w[r] > 0.f) w[r] = __fmul_rn(w[r], exp_rn(__fsub_rn(m[r], big)));
#pragma unroll
      for (int s0 = 0; s0 < 32 && 32 * r + s0 < SPLITS; s0 += kGroup) {
        float o[kGroup];
#pragma unroll
        for (int k = 0; k < kGroup; ++k)
          o[k] = (live[r] >> (s0 + k)) & 1u && i < HD ? ld_cg_f32(&ps[(32 * r + s0 + k) * (HD + 2) + i]) : 0.f;
#pragma unroll
        for (int k = 0; k < kGroup; ++k) {
          const float ws = __shfl_sync(0xffffffffu, w[r], s0 + k);
          if ((live[r] >> (s0 + k)) & 1u) {
            den = __fadd_rn(den, ws);
            num = __fadd_rn(num, __fmul_rn(ws, o[k]));
          }
        }
      }
    }
    if (i < HD) y[static_cast<int64_t>(b) * kQStride + g * HD + i] = f32_to_bf16(__fdiv_rn(num, den));
  }
}

}  // namespace dev
}  // namespace mpk
