// Megakernel generation: translate each task into a template instantiation of its task
// body plus a descriptor, and write the dispatch source. See codegen/megakernel.h.
#include "codegen/megakernel.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <sstream>

#include "ir/error.h"
#include "ir/rope.h"
#include "ir/task_graph_index.h"

namespace mpk {
namespace {

std::string task_name(const Module& m, TaskId t) {
  const Task& task = m.graph.tasks[t];
  return "task " + std::to_string(t) + " (" + std::string(name_of(task.kind)) + " of " +
         m.program.ops.at(task.op).name + ")";
}

int32_t float_bits(float f) {
  int32_t i;
  std::memcpy(&i, &f, sizeof i);
  return i;
}

struct Builder {
  const Module& m;
  const MegakernelOptions& opt;
  Megakernel& out;
  int warps;
  int batch;
  std::map<std::string, int> inst_index;
  int scratch_needed = 16;

  const Tensor& tensor(TensorId id) const { return m.program.tensor(id); }

  [[noreturn]] void fail(TaskId t, const std::string& what) const {
    throw Error("codegen: " + task_name(m, t) + ": " + what);
  }

  const Region& find(TaskId t, const std::vector<Region>& regions, TensorId id,
                     const char* role) const {
    for (const Region& r : regions)
      if (r.tensor == id) return r;
    fail(t, std::string("no ") + role + " region on tensor '" + tensor(id).name + "'");
  }

  const Region& first_of_dtype(TaskId t, const std::vector<Region>& regions, DType d, const char* role,
                               TensorId except = -1) const {
    for (const Region& r : regions)
      if (tensor(r.tensor).dtype == d && r.tensor != except) return r;
    fail(t, std::string("no ") + role + " region of dtype " + std::string(name_of(d)));
  }

  void need_full_rows(TaskId t, const Region& r) const {
    const Tensor& tt = tensor(r.tensor);
    for (size_t i = 0; i < r.dims.size(); ++i)
      if (r.dims[i].lo != 0 || r.dims[i].hi != tt.shape[i])
        fail(t, "expects the whole of '" + tt.name + "', got a part of it");
  }

  void reloc(TaskId t, abi::PtrSlot slot, TensorId id, int64_t elem_offset) {
    out.relocations.push_back({t, slot.index, id, elem_offset * size_of(tensor(id).dtype)});
  }
  // The slot gets the (cos, sin) table of the RoPE that `attrs` describe.
  void reloc_rope(TaskId t, abi::PtrSlot slot, const Attrs& attrs) {
    out.relocations.push_back({t, slot.index, -1, 0, rope_table(attrs)});
  }
  static void set_arg(abi::TaskDesc& d, abi::ArgSlot slot, int64_t value) {
    d.arg[slot.index] = static_cast<int32_t>(value);
  }

  int instantiate(const std::string& call, const std::string& prefetch = "") {
    auto it = inst_index.find(call);
    if (it != inst_index.end()) return it->second;
    const int idx = static_cast<int>(out.instantiations.size());
    out.instantiations.push_back(call);
    out.prefetches.push_back(prefetch);
    inst_index.emplace(call, idx);
    return idx;
  }

  int32_t rope_table(const Attrs& attrs) {
    const std::vector<float> inv = rope_inverse_frequencies(attrs);
    auto it = std::find(out.rope_inv.begin(), out.rope_inv.end(), inv);
    if (it != out.rope_inv.end()) return static_cast<int32_t>(it - out.rope_inv.begin());
    out.rope_inv.push_back(inv);
    return static_cast<int32_t>(out.rope_inv.size() - 1);
  }

  void scratch(int bytes) { scratch_needed = std::max(scratch_needed, bytes); }

  // "<a, b, c>", or with `more` (", true, 0") appended inside the brackets.
  static std::string targs(std::initializer_list<int64_t> v, const std::string& more = "") {
    std::string s = "<";
    bool first = true;
    for (int64_t x : v) {
      s += (first ? "" : ", ") + std::to_string(x);
      first = false;
    }
    return s + more + ">";
  }

  // runtime/device/tasks_attention.cuh: AttnScratch.
  static int attention_scratch(int64_t hd, int64_t g, int64_t rmax) {
    constexpr int64_t kTile = 64;  // AttnScratch::kTile
    return static_cast<int>(g * hd * 4 + g * ((rmax + 7) / 8 * 8) * 4 + kTile * hd * 2 + (g * 4 + 15) / 16 * 16);
  }
  // runtime/device/heads.cuh: HeadScratch (g query heads, and the k head, k and v when kv).
  static int head_scratch(int64_t hd, int64_t g, bool kv) {
    const int64_t heads = g + (kv ? 1 : 0);
    return static_cast<int>(heads * hd * 4 + (heads * 4 + 15) / 16 * 16 + (kv ? 2 * hd * 2 : 0));
  }

  // The f32 bits of a fused attention's q/k norm eps, 0 without norms.
  static int32_t qk_norm_eps_bits(const Operator& op) {
    return attention_form(op).q_norm >= 0 ? float_bits(static_cast<float>(attr_float(op.attrs, "eps"))) : 0;
  }

  // x of a linear task sits in shared memory as f32 when that takes at most 48 KiB; a
  // fused norm keeps the raw rows (bf16) after it (tasks_linear.cuh, load_x_normed).
  bool x_f32(int64_t K) const { return batch * K * 4 <= 48 * 1024; }
  int linear_scratch(int64_t K, bool norm) const {
    return static_cast<int>((batch * K * (x_f32(K) ? 4 : 2) + 15) / 16 * 16 + (norm ? batch * K * 2 : 0));
  }

  // Boxes per chunk for row groups of `rows` rows of K columns in a task of
  // `task_bytes` weights. A warp deals a chunk's boxes to its four lane groups: a task
  // whose weights all fit in the ring runs on prefetched chunks, where whole rounds of 4
  // boxes are fastest (llama-3.2-1b's q/k/v group: 8-box chunks, not 10); a larger task
  // streams, and bytes in flight set its rate (qwen3-8b's: 5-box chunks, not 4).
  int64_t chunk_boxes(int64_t rows, int64_t K, int64_t task_bytes) const {
    const int64_t fit = std::clamp<int64_t>(out.slot_bytes / (rows * 128), 1, K / 64);
    const bool prefetched = task_bytes <= int64_t{4} * out.slot_bytes;
    return prefetched && fit >= 4 ? fit / 4 * 4 : fit;
  }

  // The pool of a cooperative share's operator; share 0 (built first) creates it and
  // owns the stream image.
  int32_t pool_for(TaskId t, const CoopShare& coop, int64_t rows, int64_t unit_chunks) {
    const OpId op = m.graph.tasks[t].op;
    for (size_t p = 0; p < out.pools.size(); ++p)
      if (out.pools[p].op == op) return static_cast<int32_t>(p);
    if (coop.share != 0) fail(t, "the operator's share 0 must come first");
    out.pools.push_back({op, t, static_cast<int32_t>(coop.units(rows)), static_cast<int32_t>(unit_chunks),
                         static_cast<int32_t>(coop.shares)});
    return static_cast<int32_t>(out.pools.size() - 1);
  }

  // The f32 bits of a fused norm's eps (a template argument of the linear bodies), 0
  // without one.
  int32_t norm_eps_bits(const Operator& op) const {
    return linear_form(op).norm >= 0 ? float_bits(static_cast<float>(attr_float(op.attrs, "eps"))) : 0;
  }

  // Linear task t's K, x tensor and rows, when it may join a group (bf16 output).
  struct LinearShape {
    int64_t K = 0, rows = 0, ystride = 0;
    TensorId x = -1, norm = -1;
    int32_t eps_bits = 0;
    bool same_input(const LinearShape& o) const {
      return x == o.x && K == o.K && norm == o.norm && eps_bits == o.eps_bits;
    }
  };
  std::optional<LinearShape> groupable(TaskId t) const {
    const Task& task = m.graph.tasks[t];
    if (task.kind != TaskKind::kLinear) return std::nullopt;
    const Operator& op = m.program.ops.at(task.op);
    const LinearForm lo = linear_form(op);
    if (lo.weight < 0 || lo.residual >= 0 || lo.swiglu() || coop_share(task).cooperative())
      return std::nullopt;  // their epilogues run alone; shares claim units
    const Tensor& y = tensor(op.outputs.at(0));
    if (y.dtype != DType::kBF16) return std::nullopt;
    for (const Region& r : task.reads)
      if (r.tensor == lo.weight)
        return LinearShape{tensor(lo.weight).shape[1], r.dims[0].size(), y.shape[1], lo.x, lo.norm, norm_eps_bits(op)};
    return std::nullopt;
  }

  // The descriptor of a group of linear tasks over the same x, run as one (the
  // members' own descriptors stay in the table for per-op mode). Member m's output goes
  // to pointer slot slots::Linear::group_y(m). `st` gets the group's stream.
  abi::TaskDesc make_group(const std::vector<TaskId>& members, StreamShape& st) {
    abi::TaskDesc d = out.tasks.at(members[0]);
    const LinearShape lead = *groupable(members[0]);
    const int64_t K = lead.K;
    int64_t pad_rows = 0;
    std::string shapes;
    for (size_t i = 0; i < 4; ++i) {
      const LinearShape sh = i < members.size() ? *groupable(members[i]) : LinearShape{};
      pad_rows += (sh.rows + 7) / 8 * 8;
      shapes += ", " + std::to_string(sh.rows) + ", " + std::to_string(sh.ystride);
      if (i > 0 && i < members.size()) d.member[i - 1] = members[i];
    }
    const int64_t boxes = chunk_boxes(pad_rows, K, pad_rows * K * 2);
    const int64_t col_chunks = (K / 64 + boxes - 1) / boxes;
    st = out.stream.at(members[0]);
    st.groups = 1;
    st.col_chunks = static_cast<int32_t>(col_chunks);
    st.boxes = static_cast<int32_t>(boxes);
    st.boxes_last = static_cast<int32_t>(K / 64 - (col_chunks - 1) * boxes);
    st.members = members;
    d.members = static_cast<int32_t>(members.size());
    d.inst = instantiate("task_linear_group<" + std::to_string(K) + ", " + std::to_string(batch) + ", " +
                         std::to_string(boxes) + (x_f32(K) ? ", true, " : ", false, ") +
                         std::to_string(lead.eps_bits) + shapes + ">(d, c)");
    return d;
  }

  void check_head_dim(TaskId t, int64_t hd) const {
    if (hd % 8 != 0) fail(t, "head_dim " + std::to_string(hd) + " is not a multiple of 8");
  }

  void build_task(TaskId t) {
    const Task& task = m.graph.tasks[t];
    const Operator& op = m.program.ops.at(task.op);
    abi::TaskDesc d{};
    d.task = t;
    d.members = 1;
    std::string call, prefetch;
    auto in = [&](size_t i) -> TensorId {
      if (i >= op.inputs.size()) fail(t, "operator has too few inputs");
      return op.inputs[i];
    };
    auto outp = [&](size_t i) -> TensorId {
      if (i >= op.outputs.size()) fail(t, "operator has too few outputs");
      return op.outputs[i];
    };
    const int64_t B = batch;
    switch (task.kind) {
      case TaskKind::kEmbedding: {
        const TensorId table = in(0), tokens = in(1), y = outp(0);
        const Region& w = find(t, task.writes, y, "output");
        const int64_t c0 = w.dims[1].lo, c1 = w.dims[1].hi, H = tensor(y).shape[1];
        using Slot = abi::slots::Embedding;
        reloc(t, Slot::kTable, table, c0);
        reloc(t, Slot::kTokens, tokens, 0);
        reloc(t, Slot::kY, y, c0);
        set_arg(d, Slot::kVocab, tensor(table).shape[0]);
        call = "task_embedding" + targs({c1 - c0, H, B});
        break;
      }
      case TaskKind::kRmsNorm: {
        const TensorId x = in(0), w = in(1), y = outp(0);
        need_full_rows(t, find(t, task.writes, y, "output"));
        using Slot = abi::slots::Norm;
        reloc(t, Slot::kX, x, 0);
        reloc(t, Slot::kW, w, 0);
        reloc(t, Slot::kY, y, 0);
        set_arg(d, Slot::kEps, float_bits(static_cast<float>(attr_float(op.attrs, "eps"))));
        call = "task_rms_norm" + targs({tensor(y).shape[1], B});
        if (tensor(y).shape[1] % 8 != 0) fail(t, "hidden size is not a multiple of 8");
        scratch(static_cast<int>((tensor(y).shape[1] * 2 + 15) / 16 * 16 + 16));
        break;
      }
      case TaskKind::kLinear:
      case TaskKind::kLmHead: {
        const LinearForm lo = linear_form(op);
        if (lo.weight < 0 || lo.y < 0) fail(t, "operator has too few operands");
        const TensorId x = lo.x, W = lo.weight, y = lo.y;
        const Region& wr = find(t, task.reads, W, "weight");
        const int64_t n0 = wr.dims[0].lo, n1 = wr.dims[0].hi, K = tensor(W).shape[1];
        const Region& yr = find(t, task.writes, y, "output");
        if (yr.dims[1].lo != n0 || yr.dims[1].hi != n1)
          fail(t, "output columns do not match the weight rows");
        if (lo.up >= 0 && find(t, task.reads, lo.up, "up weight").dims[0] != wr.dims[0])
          fail(t, "the gate and up weight rows differ");
        if (K % 64 != 0) fail(t, "K = " + std::to_string(K) + " is not a multiple of 64");
        const bool f32 = tensor(y).dtype == DType::kF32, swiglu = lo.swiglu();
        const bool residual = lo.residual >= 0, norm = lo.norm >= 0;
        if ((residual || swiglu) && f32) fail(t, "a linear with a residual or SwiGLU needs a bf16 output");
        if ((residual && tensor(lo.residual).dtype != DType::kBF16) || (norm && tensor(lo.norm).dtype != DType::kBF16))
          fail(t, "a linear's residual or norm weight must be bf16");
        const int64_t rows = n1 - n0;
        // A SwiGLU task streams each row group's gate rows then its up rows.
        const int64_t max_rows = std::max<int64_t>(8, abi::max_linear_rows(warps, B) / (swiglu ? 16 : 8) * 8);
        int64_t box_rows = std::min<int64_t>({max_rows, out.slot_bytes / 128, (rows + 7) / 8 * 8});
        // A cooperative share's row groups tile its units (docs/ir.md).
        const CoopShare coop = coop_share(task);
        if (coop.cooperative()) {
          if (n0 != 0 || coop.unit_rows % 8 != 0) fail(t, "a cooperative share must declare whole units");
          box_rows = std::min<int64_t>(box_rows, coop.unit_rows);
          while (coop.unit_rows % box_rows != 0) box_rows -= 8;
        }
        const int64_t boxes = chunk_boxes(box_rows * (swiglu ? 2 : 1), K, rows * K * 2 * (swiglu ? 2 : 1));
        const int64_t groups = (rows + box_rows - 1) / box_rows;
        const int64_t col_chunks = (K / 64 + boxes - 1) / boxes;
        using Slot = abi::slots::Linear;
        reloc(t, Slot::kX, x, 0);
        reloc(t, Slot::kY, y, n0);
        if (residual) reloc(t, Slot::kResidual, lo.residual, n0);
        if (norm) reloc(t, Slot::kNorm, lo.norm, 0);
        StreamShape& st = out.stream.at(t);
        st.weight = W;
        st.weight2 = lo.up;
        st.row0 = static_cast<int32_t>(n0);
        st.groups = static_cast<int32_t>(groups);
        st.box_rows = static_cast<int32_t>(box_rows);
        st.last_rows = static_cast<int32_t>((rows - (groups - 1) * box_rows + 7) / 8 * 8);
        st.col_chunks = static_cast<int32_t>(col_chunks);
        st.boxes = static_cast<int32_t>(boxes);
        st.boxes_last = static_cast<int32_t>(K / 64 - (col_chunks - 1) * boxes);
        set_arg(d, Slot::kRow0, n0);
        const int64_t unit_groups = coop.cooperative() ? coop.unit_rows / box_rows : 0;
        if (coop.cooperative()) st.pool = pool_for(t, coop, rows, unit_groups * col_chunks);
        if (st.pool < 0 || out.pools[st.pool].image == t) out.stream_bytes_per_step += rows * K * 2 * (swiglu ? 2 : 1);
        if (st.pool >= 0 && out.pools[st.pool].image != t) st.weight = st.weight2 = -1;  // share 0's image
        const int32_t eps = norm ? float_bits(static_cast<float>(attr_float(op.attrs, "eps"))) : 0;
        const std::string x_type = x_f32(K) ? "true" : "false";
        int extra_scratch = 0;
        if (swiglu) {
          call = "task_linear_swiglu" + targs({K, rows, B, tensor(y).shape[1], box_rows, boxes},
                                              ", " + x_type + ", " + std::to_string(eps) + ", " +
                                                  std::to_string(unit_groups));
          extra_scratch = static_cast<int>(2 * 2 * B * box_rows * 4);
        } else {
          int64_t np = 0;  // an lm_head fused with its argmax: its partial slot
          if (lo.tokens >= 0) {
            const Region& vr = first_of_dtype(t, task.writes, DType::kF32, "argmax_val", y);
            const Region& ir = first_of_dtype(t, task.writes, DType::kI32, "argmax_idx");
            np = tensor(vr.tensor).shape[1];
            reloc(t, Slot::kArgmaxVal, vr.tensor, vr.dims[1].lo);
            reloc(t, Slot::kArgmaxIdx, ir.tensor, ir.dims[1].lo);
            extra_scratch = 2 * warps * 4;
          }
          call = "task_linear" + targs({K, rows, B, tensor(y).shape[1]},
                                       std::string(f32 ? ", true, " : ", false, ") + std::to_string(box_rows) + ", " +
                                           std::to_string(boxes) + ", " + x_type + (residual ? ", true, " : ", false, ") +
                                           std::to_string(eps) + ", " + std::to_string(np) + ", " +
                                           std::to_string(unit_groups));
        }
        scratch(linear_scratch(K, norm) + extra_scratch);
        break;
      }
      case TaskKind::kQkNorm:
      case TaskKind::kRope: {
        const TensorId x = in(0), y = outp(0);
        const Region& yr = find(t, task.writes, y, "output");
        const int64_t hd = attr_int(op.attrs, "head_dim");
        const int64_t a = yr.dims[1].lo, b = yr.dims[1].hi;
        if (a % hd != 0 || (b - a) % hd != 0) fail(t, "region is not whole heads");
        const int64_t stride = tensor(y).shape[1];
        if (task.kind == TaskKind::kQkNorm) {
          using Slot = abi::slots::Norm;
          reloc(t, Slot::kX, x, a);
          reloc(t, Slot::kW, in(1), 0);
          reloc(t, Slot::kY, y, a);
          set_arg(d, Slot::kEps, float_bits(static_cast<float>(attr_float(op.attrs, "eps"))));
          call = "task_qk_norm" + targs({hd, (b - a) / hd, B, stride});
        } else {
          if (hd % 2 != 0) fail(t, "rope head_dim must be even");
          using Slot = abi::slots::Rope;
          reloc(t, Slot::kX, x, a);
          reloc(t, Slot::kY, y, a);
          reloc_rope(t, Slot::kTable, op.attrs);
          call = "task_rope" + targs({hd, (b - a) / hd, B, stride, out.max_seq_len});
        }
        break;
      }
      case TaskKind::kKvAppend: {
        // A kv_append operator (k, v -> caches; with rope attrs from fuse-rope), or the
        // kv_append tasks of a fused attention.
        const AttentionForm af = attention_form(op);
        const bool fused = af.fused();
        const TensorId k = fused ? af.k : in(0), v = fused ? af.v : in(1), kc = fused ? af.k_cache : outp(0),
                       vc = fused ? af.v_cache : outp(1);
        const Region& wr = find(t, task.writes, kc, "k_cache");
        const auto& shape = tensor(kc).shape;  // [B, S, nkv, hd]
        const int64_t h = wr.dims[2].lo, hd = shape[3];
        if (wr.dims[2].size() != 1) fail(t, "expects one KV head");
        check_head_dim(t, hd);
        using Slot = abi::slots::KvAppend;
        reloc(t, Slot::kK, k, h * hd);
        reloc(t, Slot::kV, v, h * hd);
        reloc(t, Slot::kKCache, kc, h * hd);
        reloc(t, Slot::kVCache, vc, h * hd);
        const bool rope = op.attrs.count("theta") > 0;  // ropes k while appending
        if (rope) reloc_rope(t, Slot::kRopeTable, op.attrs);
        const int32_t eps = fused ? qk_norm_eps_bits(op) : 0;
        if (eps != 0) reloc(t, Slot::kKNorm, af.k_norm, 0);
        call = "task_kv_append" + targs({hd, B, shape[1], shape[2], rope ? 1 : 0, eps});
        if (rope) scratch(head_scratch(hd, 0, true));
        break;
      }
      case TaskKind::kAttention:
      case TaskKind::kAttentionPartial: {
        // A fused attention (fuse-attention) reads raw q, k and v and prepares its heads.
        const AttentionForm af = attention_form(op);
        const bool fused = af.fused();
        const TensorId q = af.q, kc = af.k_cache, vc = af.v_cache;
        if (q < 0 || af.y < 0) fail(t, "operator has too few operands");
        const Region& kr = find(t, task.reads, kc, "k_cache");
        const auto& shape = tensor(kc).shape;
        const int64_t S = shape[1], nkv = shape[2], hd = shape[3];
        const int64_t nq = attr_int(op.attrs, "num_q_heads");
        if (nq % nkv != 0) fail(t, "num_q_heads is not a multiple of num_kv_heads");
        const int64_t G = nq / nkv, h = kr.dims[2].lo;
        if (kr.dims[2].size() != 1) fail(t, "expects one KV head");
        check_head_dim(t, hd);
        // An attention task serves query heads [j0, j0 + heads) of kv head h (partials all G).
        int64_t j0 = h * G, heads = G;
        if (task.kind == TaskKind::kAttention) {
          const Range yc = find(t, task.writes, af.y, "output").dims[1];
          j0 = yc.lo / hd, heads = yc.size() / hd;
          if (yc.lo % hd != 0 || yc.hi % hd != 0 || j0 / G != h || (j0 + heads - 1) / G != h)
            fail(t, "output is not whole query heads of its KV head");
        }
        using Slot = abi::slots::Attention;
        reloc(t, Slot::kQ, q, j0 * hd);
        reloc(t, Slot::kKCache, kc, h * hd);
        reloc(t, Slot::kVCache, vc, h * hd);
        set_arg(d, Slot::kScale, float_bits(static_cast<float>(attr_float(op.attrs, "scale"))));
        if (heads > warps) fail(t, "more query heads per task than warps");
        const int32_t eps = fused ? qk_norm_eps_bits(op) : 0;
        if (fused) {
          reloc(t, Slot::kK, af.k, h * hd);
          reloc(t, Slot::kV, af.v, h * hd);
          reloc_rope(t, Slot::kRopeTable, op.attrs);
          if (eps != 0) {
            reloc(t, Slot::kQNorm, af.q_norm, 0);
            reloc(t, Slot::kKNorm, af.k_norm, 0);
          }
        }
        const std::string form = std::string(fused ? ", true, " : ", false, ") + std::to_string(eps);
        if (opt.l2_prefetch)
          prefetch = "attention_prefetch" +
                     targs({hd, B, S, nkv}, task.kind == TaskKind::kAttention ? ", false" : ", true") +
                     "(d, step, lane)";
        if (task.kind == TaskKind::kAttention) {
          reloc(t, Slot::kOut, af.y, j0 * hd);
          const bool appends = std::any_of(task.writes.begin(), task.writes.end(),
                                           [&](const Region& r) { return r.tensor == kc; });
          call = "task_attention" + targs({hd, heads, B, S, nkv, nq},
                                          form + (appends ? ", true" : ", false"));
          scratch(attention_scratch(hd, heads, S) + (fused ? head_scratch(hd, heads, true) : 0));
        } else {
          const Region& pr = first_of_dtype(t, task.writes, DType::kF32, "attn_part");
          const Tensor& part = tensor(pr.tensor);  // [B, nq, splits, hd + 2]
          const int64_t splits = part.shape[2], s = pr.dims[2].lo;
          reloc(t, Slot::kOut, pr.tensor, (h * G * splits + s) * (hd + 2));
          set_arg(d, Slot::kFirstPos, kr.dims[1].lo);
          set_arg(d, Slot::kEndPos, kr.dims[1].hi);
          const int64_t rmax = (S + splits - 1) / splits;  // the longest split range
          if (kr.dims[1].size() > rmax) fail(t, "split range longer than ceil(S / splits)");
          call = "task_attention_partial" + targs({hd, G, B, S, nkv, splits, rmax}, form);
          scratch(attention_scratch(hd, G, rmax) + (fused ? head_scratch(hd, G, false) : 0));
        }
        break;
      }
      case TaskKind::kAttentionMerge: {
        const Region& pr = first_of_dtype(t, task.reads, DType::kF32, "attn_part");
        const Tensor& part = tensor(pr.tensor);
        const int64_t nq = part.shape[1], splits = part.shape[2], hd = part.shape[3] - 2;
        const int64_t nkv = attr_int(op.attrs, "num_kv_heads");
        const int64_t G = nq / nkv, h = pr.dims[1].lo / G;
        reloc(t, abi::slots::AttentionMerge::kPart, pr.tensor, h * G * splits * (hd + 2));
        reloc(t, abi::slots::AttentionMerge::kY, outp(0), h * G * hd);
        call = "task_attention_merge" + targs({hd, G, B, nkv, splits});
        break;
      }
      case TaskKind::kSiluMul:
      case TaskKind::kResidualAdd: {
        const TensorId a = in(0), b = in(1), y = outp(0);
        const Region& yr = find(t, task.writes, y, "output");
        const int64_t c0 = yr.dims[1].lo, c1 = yr.dims[1].hi;
        reloc(t, abi::slots::Binary::kA, a, c0);
        reloc(t, abi::slots::Binary::kB, b, c0);
        reloc(t, abi::slots::Binary::kY, y, c0);
        call = std::string(task.kind == TaskKind::kSiluMul ? "task_silu_mul" : "task_residual_add") +
               targs({c1 - c0, B, tensor(y).shape[1]});
        break;
      }
      case TaskKind::kArgmaxPartial: {
        const TensorId logits = in(0);
        const Region& lr = find(t, task.reads, logits, "logits");
        const Region& vr = first_of_dtype(t, task.writes, DType::kF32, "argmax_val");
        const Region& ir = first_of_dtype(t, task.writes, DType::kI32, "argmax_idx");
        const int64_t v0 = lr.dims[1].lo, v1 = lr.dims[1].hi, p = vr.dims[1].lo;
        const int64_t np = tensor(vr.tensor).shape[1];
        using Slot = abi::slots::ArgmaxPartial;
        reloc(t, Slot::kLogits, logits, v0);
        reloc(t, Slot::kVal, vr.tensor, p);
        reloc(t, Slot::kIdx, ir.tensor, p);
        set_arg(d, Slot::kFirstRow, v0);
        call = "task_argmax_partial" + targs({v1 - v0, B, tensor(logits).shape[1], np});
        scratch(warps * 8);
        break;
      }
      case TaskKind::kArgmaxReduce: {
        const Region& vr = first_of_dtype(t, task.reads, DType::kF32, "argmax_val");
        const Region& ir = first_of_dtype(t, task.reads, DType::kI32, "argmax_idx");
        using Slot = abi::slots::ArgmaxReduce;
        reloc(t, Slot::kVal, vr.tensor, 0);
        reloc(t, Slot::kIdx, ir.tensor, 0);
        // The reduce of an argmax operator, or of an lm_head fused with its argmax.
        reloc(t, Slot::kTokens, op.kind == OpKind::kLmHead ? linear_form(op).tokens : outp(0), 0);
        call = "task_argmax_reduce" + targs({tensor(vr.tensor).shape[1], B});
        scratch(warps * 8);
        break;
      }
    }
    if (call.find('(') == std::string::npos) call += "(d, c)";
    d.inst = instantiate(call, prefetch);
    out.tasks[t] = d;
  }
};

std::string format_source(const Megakernel& k) {
  std::ostringstream os;
  os << "// Generated by mpk codegen; do not edit. " << k.instantiations.size()
     << " task-body instantiations.\n";
  os << "#define MPK_THREADS " << k.threads << "\n";
  os << "#define MPK_STAGES " << k.stages << "\n";
  os << "#define MPK_SLOT_BYTES " << k.slot_bytes << "\n";
  os << "#define MPK_INFLIGHT " << k.inflight << "\n";
  os << "#define MPK_SCRATCH_BYTES " << k.scratch_bytes << "\n";
  os << "#define MPK_POOL_SLOTS " << k.pool_slots << "\n";
  os << "#include <cstddef>\n";
  os << "#include \"runtime/device/megakernel.cuh\"\n\n";
  os << "namespace mpk_gen {\n";
  os << "struct Dispatch {\n";
  os << "  __device__ __forceinline__ void operator()(const mpk::dev::TaskDesc& d, "
        "mpk::dev::TaskCtx& c) const {\n";
  os << "    using namespace mpk::dev;\n";
  os << "    switch (d.inst) {\n";
  for (size_t i = 0; i < k.instantiations.size(); ++i)
    os << "      case " << i << ": " << k.instantiations[i] << "; break;\n";
  os << "      default: break;\n";
  os << "    }\n  }\n";
  os << "  static __device__ __forceinline__ void prefetch(const mpk::dev::TaskDesc& d, int32_t step, "
        "int lane) {\n";
  os << "    using namespace mpk::dev;\n";
  os << "    switch (d.inst) {\n";
  for (size_t i = 0; i < k.prefetches.size(); ++i)
    if (!k.prefetches[i].empty()) os << "      case " << i << ": " << k.prefetches[i] << "; break;\n";
  os << "      default: break;\n";
  os << "    }\n  }\n};\n}  // namespace mpk_gen\n\n";
  os << "MPK_DEFINE_KERNELS(mpk_gen::Dispatch)\n";
  return os.str();
}


// Worker queues, in schedule order, with runs of adjacent linear tasks over the same x
// (same K, waits a subset of the first one's, at most the rows one block can chain)
// merged into group descriptors appended after the tasks. Merging cannot deadlock: a
// group waits for nothing its first task did not already wait for.
// Whether task n may join leader t's group: t waits for everything n waits for in its
// own step. What n waits for from earlier steps the group waits for too; that cannot
// deadlock, because no task of an earlier step depends on a later step's.
bool joins_waits(const TaskGraph& g, const TaskGraphIndex& index, TaskId t, TaskId n) {
  const std::span<const EventId> lead = index.waits(t);
  for (EventId e : index.waits(n))
    if (g.events[e].step_distance == 0 && !std::binary_search(lead.begin(), lead.end(), e)) return false;
  return true;
}

// The events a queue item waits on: a task's, or the union of a group's members'.
std::vector<EventId> item_waits(const abi::TaskDesc& d, TaskId leader, const TaskGraphIndex& index) {
  const std::span<const EventId> own = index.waits(leader);
  std::vector<EventId> all(own.begin(), own.end());
  for (int m = 1; m < d.members; ++m) {
    const std::span<const EventId> more = index.waits(d.member[m - 1]);
    all.insert(all.end(), more.begin(), more.end());
  }
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  return all;
}

void build_queues(Builder& b, const TaskGraph& g, const TaskGraphIndex& index, Megakernel& k) {
  const int64_t max_rows = abi::max_linear_rows(b.warps, b.batch);
  const auto valid = [&](TaskId t) { return t >= 0 && t < static_cast<TaskId>(g.tasks.size()); };
  std::vector<int> seen(g.tasks.size(), 0);
  k.queue_offsets.push_back(0);
  for (const auto& list : g.schedule.workers) {
    for (size_t i = 0; i < list.size();) {
      const TaskId t = list[i];
      if (!valid(t) || seen[t]++)
        throw Error("codegen: the schedule lists task " + std::to_string(t) + " twice or out of range");
      std::vector<TaskId> members = {t};
      if (const auto lead = b.groupable(t); lead && lead->rows <= max_rows) {
        int64_t rows = (lead->rows + 7) / 8 * 8;
        while (members.size() < 4 && i + members.size() < list.size()) {
          const TaskId n = list[i + members.size()];
          const auto next = valid(n) && !seen[n] ? b.groupable(n) : std::nullopt;
          if (!next || !next->same_input(*lead) || rows + (next->rows + 7) / 8 * 8 > max_rows ||
              !joins_waits(g, index, t, n))
            break;
          rows += (next->rows + 7) / 8 * 8;
          members.push_back(n);
        }
      }
      if (members.size() == 1) {
        k.queue_items.push_back(t);
      } else {
        for (size_t j = 1; j < members.size(); ++j) ++seen[members[j]];
        const int32_t index = static_cast<int32_t>(k.tasks.size());
        k.queue_items.push_back(index);
        StreamShape stream;
        k.tasks.push_back(b.make_group(members, stream));
        k.stream.push_back(std::move(stream));
        // The leader's pointers, then each member's output in its group slot.
        using Slot = abi::slots::Linear;
        for (size_t r = 0, n = k.relocations.size(); r < n; ++r)
          for (size_t m = 0; m < members.size(); ++m)
            if (k.relocations[r].task == members[m] && (m == 0 || k.relocations[r].slot == Slot::kY.index)) {
              Relocation copy = k.relocations[r];
              copy.task = index;
              if (copy.slot == Slot::kY.index) copy.slot = Slot::group_y(static_cast<int>(m)).index;
              k.relocations.push_back(copy);
            }
      }
      i += members.size();
    }
    k.queue_offsets.push_back(static_cast<int32_t>(k.queue_items.size()));
  }
  for (size_t t = 0; t < seen.size(); ++t)
    if (!seen[t]) throw Error("codegen: task " + std::to_string(t) + " is not scheduled");
}

}  // namespace

Megakernel generate_megakernel(const Module& m, const MegakernelOptions& opt) {
  if (m.graph.schedule.empty()) throw Error("codegen: the module has no schedule (run assign-sm)");
  if (opt.threads % 32 != 0 || opt.threads < 64 || opt.threads + abi::kControlThreads > 1024)
    throw Error("codegen: threads must be a multiple of 32 in [64, " + std::to_string(1024 - abi::kControlThreads) +
                "]");
  const TaskGraph& g = m.graph;
  Megakernel k;
  k.threads = opt.threads;
  k.batch = static_cast<int32_t>(attr_int(m.attrs, "batch"));
  k.vocab = static_cast<int32_t>(attr_int(m.attrs, "vocab"));
  k.max_seq_len = static_cast<int32_t>(attr_int(m.attrs, "max_seq_len"));
  k.num_events = static_cast<int32_t>(g.events.size());
  k.num_workers = static_cast<int32_t>(g.schedule.workers.size());
  if (opt.slot_bytes % 1024 != 0 || opt.slot_bytes < 1024)
    throw Error("codegen: slot_bytes must be a positive multiple of 1024");
  if (opt.inflight < 0) throw Error("codegen: inflight must be >= 0 (0: one copy per slot)");
  // Events each task waits on and triggers, ascending.
  const TaskGraphIndex index(g);
  index.require_valid();
  // Large batches need x of B rows in shared memory: halve the slots (and with them the
  // row groups) until two of them fit beside the scratch.
  for (k.slot_bytes = opt.slot_bytes;; k.slot_bytes /= 2) {
    k.tasks.assign(g.tasks.size(), abi::TaskDesc{});
    k.relocations.clear();
    k.stream.assign(g.tasks.size(), StreamShape{});
    k.instantiations.clear();
    k.prefetches.clear();
    k.stream_bytes_per_step = 0;
    k.rope_inv.clear();
    k.queue_items.clear();
    k.queue_offsets.clear();
    k.pools.clear();
    Builder b{m, opt, k, opt.threads / 32, k.batch, {}};
    for (TaskId t = 0; t < static_cast<TaskId>(g.tasks.size()); ++t) b.build_task(t);
    build_queues(b, g, index, k);
    k.scratch_bytes = (b.scratch_needed + 127) / 128 * 128;
    k.stages = static_cast<int>((opt.smem_bytes - 1024 - k.scratch_bytes) / k.slot_bytes);
    if (k.stages >= 2) break;
    if (k.slot_bytes < 2048 || k.slot_bytes % 2048 != 0)
      throw Error("codegen: shared memory too small: " + std::to_string(opt.smem_bytes) +
                  " bytes for scratch " + std::to_string(k.scratch_bytes) + " and two weight slots");
  }
  k.stages = std::min(k.stages, 32);
  k.inflight = opt.inflight == 0 ? k.stages : std::min(opt.inflight, k.stages);
  for (int32_t w = 0; w < k.num_workers; ++w) {  // cooperative shares per step of a queue
    int32_t shares = 0;
    for (int32_t q = k.queue_offsets[w]; q < k.queue_offsets[w + 1]; ++q) shares += k.stream[k.queue_items[q]].pool >= 0;
    k.pool_slots = std::max(k.pool_slots, shares);
  }
  k.dynamic_smem_bytes = 1024 + static_cast<int64_t>(k.stages) * k.slot_bytes + k.scratch_bytes;

  // Wait and trigger tables: the first kInlineWaits / kInlineTrigs in the descriptor, the
  // rest in the tables. A group waits for its members' events (beyond its leader's,
  // only earlier steps': joins_waits) and triggers every member's events once the
  // whole group is done.
  for (size_t i = 0; i < k.tasks.size(); ++i) {
    abi::TaskDesc& d = k.tasks[i];
    const bool group = i >= g.tasks.size();
    const TaskId leader = group ? d.task : static_cast<TaskId>(i);
    d.wait_begin = static_cast<int32_t>(k.waits.size());
    const std::vector<EventId> waits = item_waits(d, leader, index);
    d.wait_count = static_cast<int32_t>(waits.size());
    for (int32_t w = 0; w < d.wait_count; ++w) {
      const Event& e = g.events[waits[w]];
      const abi::WaitEntry entry{waits[w], static_cast<int32_t>(e.target), e.step_distance, 0};
      if (w < abi::kInlineWaits)
        d.wait[w] = entry;
      else
        k.waits.push_back(entry);
    }
    std::vector<EventId> fired;
    for (int mi = 0; mi < d.members; ++mi) {
      const std::span<const EventId> own = index.triggers(mi == 0 ? leader : d.member[mi - 1]);
      fired.insert(fired.end(), own.begin(), own.end());
    }
    d.trig_begin = static_cast<int32_t>(k.triggers.size());
    d.trig_count = static_cast<int32_t>(fired.size());
    for (size_t j = 0; j < fired.size(); ++j) {
      if (j < abi::kInlineTrigs)
        d.trig[j] = fired[j];
      else
        k.triggers.push_back(fired[j]);
    }
  }

  // Per-op launches: operators in program order, each task kind's stage (ir/kinds.def)
  // after the other: a fused attention's partials read what its kv_append tasks store,
  // and merges and argmax reduces read the partials. (The kv_append tasks after
  // one-split attention tasks share their launch: those tasks never read the row a
  // kv_append stores.)
  std::vector<std::vector<TaskId>> by_op(m.program.ops.size());
  for (TaskId t = 0; t < static_cast<TaskId>(g.tasks.size()); ++t) by_op.at(g.tasks[t].op).push_back(t);
  for (OpId o = 0; o < static_cast<OpId>(by_op.size()); ++o) {
    for (int rank = 0; rank < 3; ++rank) {
      OpLaunch l;
      for (TaskId t : by_op[o])
        if (stage_of(g.tasks[t].kind) == rank) l.tasks.push_back(t);
      if (l.tasks.empty()) continue;
      l.name = m.program.ops[o].name;
      if (rank > 0) l.name += "." + std::string(name_of(g.tasks[l.tasks[0]].kind));
      k.op_launches.push_back(std::move(l));
    }
  }

  k.source = format_source(k);
  return k;
}

}  // namespace mpk
