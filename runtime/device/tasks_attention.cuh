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

// Shared memory of one attention task: q [G][HD] f32, scores [G][kRow] f32 (rows of
// RMAX rounded up to 8, so that 8 scores load as two 16-byte vectors), a V tile
// [kTile][HD] bf16, and m per head (the whole a multiple of 16 bytes).
template <int HD, int G, int RMAX>
struct AttnScratch {
  static constexpr int kTile = 64;
  static constexpr int kRow = (RMAX + 7) / 8 * 8;
  static constexpr int kQ = G * HD * 4;
  static constexpr int kS = G * kRow * 4;
  static constexpr int kV = kTile * HD * 2;
  static constexpr int kBytes = kQ + kS + kV + ((G * 4 + 15) / 16) * 16;
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
// issue() requests the first K pieces and V tile, run() computes. Position cur (relative
// to t0; -1: none) comes from shared memory instead of the cache (HeadScratch::current:
// k [HD] then v [HD]), the fused attention's own append, whose store it need not wait
// for.
template <int HD, int G, int S, int NKV, int RMAX>
struct Attend {
  static_assert(HD % 8 == 0, "attention: head_dim must be a multiple of 8");
  static_assert(G <= kWarps, "attention: more query heads per KV head than warps");
  using Sh = AttnScratch<HD, G, RMAX>;
  static constexpr int L = HD / 8;  // 16-byte pieces of a head
  // Where L is a power of two, the L threads of one position share its K pieces, and the
  // canonical tree of a score's pieces is a shuffle butterfly (the tree's padding adds
  // only zeros); each thread requests kBatch pieces at once.
  static constexpr bool kShuffle = (L & (L - 1)) == 0 && L <= 32;
  static constexpr int kBatch = 8;
  static constexpr int kVPer = (Sh::kTile * L + kThreads - 1) / kThreads;
  const bf16_t* kc;
  const bf16_t* vc;
  int64_t row0;
  int n, cur;
  uint4 kr[kBatch];
  uint4 vr[kVPer];

  __device__ Attend(const bf16_t* k_cache, const bf16_t* v_cache, int b, int t0, int t1, int current)
      : kc(k_cache), vc(v_cache), row0(static_cast<int64_t>(b) * S + t0), n(t1 > t0 ? t1 - t0 : 0), cur(current) {}

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
  __device__ __forceinline__ void load_v(int tile) {
    const int cnt = min(Sh::kTile, n - tile);
#pragma unroll
    for (int j = 0; j < kVPer; ++j) {
      const int v = threadIdx.x + j * kThreads;
      if (v < cnt * L && tile + v / L != cur) vr[j] = piece(vc, tile + v / L, v % L);
    }
  }
  __device__ __forceinline__ void issue() {
    if constexpr (kShuffle) load_k(0);
    load_v(0);
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
    const float* qs = reinterpret_cast<const float*>(scratch);
    float* sc = reinterpret_cast<float*>(scratch + Sh::kQ);
    bf16_t* vt = reinterpret_cast<bf16_t*>(scratch + Sh::kQ + Sh::kS);
    float* ml = reinterpret_cast<float*>(scratch + Sh::kQ + Sh::kS + Sh::kV);  // m[G]
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
    // that head's l alongside; V tiles go through registers (each tile's loads overlap
    // the previous tile's sums); the chains take 8 positions at a time, their scores and
    // V rows loaded first, the scores as two 16-byte vectors.
    constexpr int kE = G * HD <= kThreads ? 1 : G * HD <= 2 * kThreads ? 2 : G * HD <= 4 * kThreads ? 4 : 8;
    static_assert(G * HD <= 8 * kThreads, "attention: more than 8 output elements per thread");
    const int u0 = threadIdx.x * kE, g = u0 / HD, i0 = u0 % HD;
    const bool mine = u0 < G * HD;
    float o[kE], l = 0.f;
#pragma unroll
    for (int e = 0; e < kE; ++e) o[e] = 0.f;
#pragma unroll 1
    for (int tile = 0; tile < n; tile += Sh::kTile) {
      const int cnt = min(Sh::kTile, n - tile);
#pragma unroll
      for (int j = 0; j < kVPer; ++j) {
        const int v = threadIdx.x + j * kThreads;
        if (v >= cnt * L) continue;
        const int t = tile + v / L, p = v % L;
        uint4 w = vr[j];
        if (t == cur) w = *reinterpret_cast<const uint4*>(cs + HD + p * 8);
        *reinterpret_cast<uint4*>(vt + (v / L) * HD + p * 8) = w;
      }
      body_sync();
      if (tile + Sh::kTile < n) load_v(tile + Sh::kTile);
      if (mine) {
#pragma unroll 1
        for (int t0 = 0; t0 < cnt; t0 += 8) {  // rows past cnt are read (in bounds), never used
          const float* pg = sc + g * Sh::kRow + tile + t0;
          const float4 pa = *reinterpret_cast<const float4*>(pg), pb = *reinterpret_cast<const float4*>(pg + 4);
          const float pw[8] = {pa.x, pa.y, pa.z, pa.w, pb.x, pb.y, pb.z, pb.w};
          float vw[8][kE];
#pragma unroll
          for (int e = 0; e < 8; ++e) bf16_row<kE>(vt + (t0 + e) * HD + i0, vw[e]);
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
    }
    if (mine) {
#pragma unroll
      for (int k = 0; k < kE; ++k) out(g, i0 + k, n > 0 ? __fdiv_rn(o[k], l) : 0.f, ml[g], l);
    }
    body_sync();
  }
};

// The dispatch warp's L2 prefetch for an attention task of B rows (PARTIAL: a partial
// task over its positions [kFirstPos, kEndPos)) at a step whose first position is `pos0`
// (positions.cuh, step_first_pos), issued before its event waits: the cache rows of the
// positions before pos0, which earlier steps wrote, of the task's sequences, so that the
// task's loads find them in L2. A prefetch is a hint and L2 is the point of coherence: it
// cannot make a load stale.
template <int HD, int B, int S, int NKV, bool PARTIAL>
__device__ __forceinline__ void attention_prefetch(const TaskDesc& d, int32_t pos0, int lane) {
  using Slot = slots::Attention;
  const int t0 = PARTIAL ? arg_int(d, Slot::kFirstPos) : 0;
  const int t1 = min(PARTIAL ? arg_int(d, Slot::kEndPos) : S, min(pos0, S));
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
  using Sh = AttnScratch<HD, G, S>;
  using Hs = HeadScratch<HD, G, true>;
  static_assert(Sh::kBytes + (FUSED ? Hs::kBytes : 0) <= kScratchBytes, "attention: scratch too small");
  static_assert(FUSED || !APPEND, "attention: only a fused attention appends");
  static_assert(kChunk == 1 || !FUSED || APPEND, "attention: a prefill chunk's fused attention appends its rows");
  constexpr bool kAppendFirst = kChunk > 1 && FUSED;
  constexpr int kQStride = NQ * HD;
  using Slot = slots::Attention;
  bf16_t* y = dptr<bf16_t>(d, Slot::kOut);
  const int32_t row0 = kChunk == 1 ? 0 : arg_int(d, Slot::kChunkRow0);
  unsigned char* heads = c.scratch + Sh::kBytes;
  if constexpr (kAppendFirst) append_heads<HD, B, S, NKV, EPS_BITS>(fused_heads<HD, NQ, NKV>(d), *c.params, c.step, row0, heads);
#pragma unroll 1
  for (int b = 0; b < B; ++b) {
    const RowPos pos = row_pos(*c.params, c.step, row0 + b);
    Attend<HD, G, S, NKV, S> at(dptr<const bf16_t>(d, Slot::kKCache), dptr<const bf16_t>(d, Slot::kVCache), pos.seq, 0,
                                min(pos.pos + 1, S), FUSED && !kAppendFirst && pos.pos < S ? pos.pos : -1);
    at.issue();
    if constexpr (FUSED) {
      HeadPrep<HD, G, S, NKV, EPS_BITS, !kAppendFirst, APPEND && !kAppendFirst> prep;
      const HeadIo io = fused_heads<HD, NQ, NKV>(d);
      prep.issue(io, b, pos);
      prep.finish(io, pos, reinterpret_cast<float*>(c.scratch), heads);
    } else {
      load_q<HD, G, NQ>(dptr<const bf16_t>(d, Slot::kQ), b, c.scratch);
    }
    at.run(arg_float(d, Slot::kScale), Hs::current(heads), c.scratch, [&](int g, int i, float o, float, float) {
      y[static_cast<int64_t>(b) * kQStride + g * HD + i] = f32_to_bf16(o);
    });
  }
}

// As task_attention over [s0, s1) ∩ [0, pos] (s1 - s0 <= RMAX; kFirstPos, kEndPos);
// kOut: attn_part + (h*G*SPLITS + s)*(HD+2) of attn_part [B, NQ, SPLITS, HD+2] (f32).
// FUSED: q is raw and prepared here (its k and v were appended by the operator's
// kv_append tasks).
template <int HD, int G, int B, int S, int NKV, int SPLITS, int RMAX, bool FUSED, int EPS_BITS>
__device__ void task_attention_partial(const TaskDesc& d, TaskCtx& c) {
  using Sh = AttnScratch<HD, G, RMAX>;
  static_assert(Sh::kBytes + (FUSED ? HeadScratch<HD, G, false>::kBytes : 0) <= kScratchBytes,
                "attention: scratch too small");
  constexpr int64_t kPartRow = static_cast<int64_t>(NKV) * G * SPLITS * (HD + 2);
  using Slot = slots::Attention;
  float* part = dptr<float>(d, Slot::kOut);
  const int32_t row0 = kChunk == 1 ? 0 : arg_int(d, Slot::kChunkRow0);
  const int s0 = arg_int(d, Slot::kFirstPos);
#pragma unroll 1
  for (int b = 0; b < B; ++b) {
    const RowPos pos = row_pos(*c.params, c.step, row0 + b);
    Attend<HD, G, S, NKV, RMAX> at(dptr<const bf16_t>(d, Slot::kKCache), dptr<const bf16_t>(d, Slot::kVCache), pos.seq,
                                   s0, min(arg_int(d, Slot::kEndPos), pos.pos + 1), -1);
    at.issue();
    if constexpr (FUSED) {
      HeadPrep<HD, G, S, NKV, EPS_BITS, false> prep;
      const HeadIo io = fused_heads<HD, NKV * G, NKV>(d);
      prep.issue(io, b, pos);
      prep.finish(io, pos, reinterpret_cast<float*>(c.scratch), c.scratch + Sh::kBytes);
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

// slots::AttentionMerge: attn_part + h*G*SPLITS*(HD+2); y + h*G*HD (rows of NQ*HD).
template <int HD, int G, int B, int NKV, int SPLITS>
__device__ void task_attention_merge(const TaskDesc& d, TaskCtx& c) {
  constexpr int kQStride = NKV * G * HD;
  constexpr int64_t kPartRow = static_cast<int64_t>(NKV) * G * SPLITS * (HD + 2);
  const float* part = dptr<const float>(d, slots::AttentionMerge::kPart);
  bf16_t* y = dptr<bf16_t>(d, slots::AttentionMerge::kY);
  for (int u = threadIdx.x; u < B * G * HD; u += kThreads) {
    const int b = u / (G * HD), g = (u / HD) % G, i = u % HD;
    const float* ps = part + b * kPartRow + static_cast<int64_t>(g) * SPLITS * (HD + 2);
    // The splits' (m, l), then their (o_i, m, l) again, kGroup splits' loads in flight at
    // once (one L2 round trip per group, not one or two per split); the sums in split order.
    constexpr int kGroup = SPLITS < 16 ? SPLITS : 16;
    float big = -INFINITY;
#pragma unroll 1
    for (int s0 = 0; s0 < SPLITS; s0 += kGroup) {
      float m[kGroup], l[kGroup];
#pragma unroll
      for (int k = 0; k < kGroup; ++k)
        if (s0 + k < SPLITS) m[k] = ld_cg_f32(&ps[(s0 + k) * (HD + 2) + HD]), l[k] = ld_cg_f32(&ps[(s0 + k) * (HD + 2) + HD + 1]);
#pragma unroll
      for (int k = 0; k < kGroup; ++k)
        if (s0 + k < SPLITS && l[k] > 0.f) big = fmaxf(big, m[k]);
    }
    float num = 0.f, den = 0.f;
#pragma unroll 1
    for (int s0 = 0; s0 < SPLITS; s0 += kGroup) {
      float o[kGroup], m[kGroup], l[kGroup];
#pragma unroll
      for (int k = 0; k < kGroup; ++k)
        if (s0 + k < SPLITS) {
          const float* r = &ps[(s0 + k) * (HD + 2)];
          o[k] = ld_cg_f32(&r[i]), m[k] = ld_cg_f32(&r[HD]), l[k] = ld_cg_f32(&r[HD + 1]);
        }
#pragma unroll
      for (int k = 0; k < kGroup; ++k) {
        if (s0 + k >= SPLITS || !(l[k] > 0.f)) continue;  // an empty split contributes nothing
        const float w = __fmul_rn(l[k], exp_rn(__fsub_rn(m[k], big)));
        den = __fadd_rn(den, w);
        num = __fadd_rn(num, __fmul_rn(w, o[k]));
      }
    }
    y[static_cast<int64_t>(b) * kQStride + g * HD + i] = f32_to_bf16(__fdiv_rn(num, den));
  }
}

}  // namespace dev
}  // namespace mpk
