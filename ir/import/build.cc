// Builds the decode-step Program of docs/ir.md from a ModelConfig, and resolves an
// import spec (preset | directory | config.json) into a verified Module.
#include <algorithm>
#include <cmath>

#include "ir/architectures.h"
#include "ir/checked.h"
#include "ir/error.h"
#include "ir/import/import.h"
#include "ir/import/model_source.h"
#include "ir/verifier.h"

namespace mpk {
namespace {

class ProgramBuilder {
 public:
  // `c.architecture` is one of ir/architectures.h's (build_module checks).
  ProgramBuilder(const ModelConfig& c, int64_t batch, int64_t seq)
      : c_(c), arch_(*find_architecture(c.architecture)), b_(batch), s_(seq),
        q_dim_(c.num_q_heads * c.head_dim), kv_dim_(c.num_kv_heads * c.head_dim) {}

  Program build() {
    const TensorId tokens = add("tokens", DType::kI32, {b_}, TensorRole::kInput);
    const TensorId embed = weight("model.embed_tokens.weight", {c_.vocab, c_.hidden});
    TensorId h = act("h.0", c_.hidden);
    op("embed", OpKind::kEmbedding, {embed, tokens}, {h});
    for (int32_t l = 0; l < c_.num_layers; ++l) h = layer(l, h);
    const TensorId norm_w = weight("model.norm.weight", {c_.hidden});
    const TensorId xf = act("xf", c_.hidden);
    op("final_norm", OpKind::kRmsNorm, {h, norm_w}, {xf}, {{"eps", c_.rms_eps}});
    const TensorId head =
        c_.tied_embeddings ? embed : weight("lm_head.weight", {c_.vocab, c_.hidden});
    const TensorId logits = add("logits", DType::kF32, {b_, c_.vocab}, TensorRole::kOutput);
    op("lm_head", OpKind::kLmHead, {xf, head}, {logits});
    op("argmax", OpKind::kArgmax, {logits}, {tokens});
    p_.rebuild_use_lists();
    return std::move(p_);
  }

 private:
  TensorId layer(int32_t l, TensorId h) {
    const std::string L = "L" + std::to_string(l) + ".";
    const std::string W = "model.layers." + std::to_string(l) + ".";
    const std::string n = "." + std::to_string(l);
    layer_ = l;

    const TensorId in_norm_w = weight(W + "input_layernorm.weight", {c_.hidden});
    const TensorId xn = act("xn" + n, c_.hidden);
    op(L + "input_norm", OpKind::kRmsNorm, {h, in_norm_w}, {xn}, {{"eps", c_.rms_eps}});

    // Qwen2: a bias on q, k and v (linear(x, W, bias){bias=1}).
    const bool bias = arch_.qkv_bias;
    const TensorId q = linear(L + "q_proj", W + "self_attn.q_proj", xn, "q" + n, q_dim_, bias);
    const TensorId k = linear(L + "k_proj", W + "self_attn.k_proj", xn, "k" + n, kv_dim_, bias);
    const TensorId v = linear(L + "v_proj", W + "self_attn.v_proj", xn, "v" + n, kv_dim_, bias);

    TensorId q_in = q, k_in = k;
    if (arch_.qk_norm) {
      const Attrs norm_attrs = {{"eps", c_.rms_eps}, {"head_dim", c_.head_dim}};
      const TensorId qw = weight(W + "self_attn.q_norm.weight", {c_.head_dim});
      q_in = act("qn" + n, q_dim_);
      op(L + "q_norm", OpKind::kQkNorm, {q, qw}, {q_in}, norm_attrs);
      const TensorId kw = weight(W + "self_attn.k_norm.weight", {c_.head_dim});
      k_in = act("kn" + n, kv_dim_);
      op(L + "k_norm", OpKind::kQkNorm, {k, kw}, {k_in}, norm_attrs);
    }
    const TensorId qr = act("qr" + n, q_dim_);
    op(L + "q_rope", OpKind::kRope, {q_in}, {qr}, rope_attrs());
    const TensorId kr = act("kr" + n, kv_dim_);
    op(L + "k_rope", OpKind::kRope, {k_in}, {kr}, rope_attrs());

    const std::vector<int64_t> cache_shape = {b_, s_, c_.num_kv_heads, c_.head_dim};
    const TensorId kc = add("k_cache" + n, DType::kBF16, cache_shape, TensorRole::kKvCache);
    const TensorId vc = add("v_cache" + n, DType::kBF16, cache_shape, TensorRole::kKvCache);
    op(L + "kv_append", OpKind::kKvAppend, {kr, v}, {kc, vc});

    const TensorId attn = act("attn" + n, q_dim_);
    op(L + "attention", OpKind::kAttention, {qr, kc, vc}, {attn},
       {{"num_q_heads", c_.num_q_heads},
        {"num_kv_heads", c_.num_kv_heads},
        {"head_dim", c_.head_dim},
        {"scale", 1.0 / std::sqrt(static_cast<double>(c_.head_dim))}});
    const TensorId o = linear(L + "o_proj", W + "self_attn.o_proj", attn, "o" + n, c_.hidden);
    const TensorId h_mid = act("h_mid" + n, c_.hidden);
    op(L + "attn_residual", OpKind::kResidualAdd, {h, o}, {h_mid});

    const TensorId post_w = weight(W + "post_attention_layernorm.weight", {c_.hidden});
    const TensorId xn2 = act("xn2" + n, c_.hidden);
    op(L + "post_norm", OpKind::kRmsNorm, {h_mid, post_w}, {xn2}, {{"eps", c_.rms_eps}});
    const TensorId gate = linear(L + "gate_proj", W + "mlp.gate_proj", xn2, "gate" + n, c_.intermediate);
    const TensorId up = linear(L + "up_proj", W + "mlp.up_proj", xn2, "up" + n, c_.intermediate);
    const TensorId a = act("act" + n, c_.intermediate);
    op(L + "silu_mul", OpKind::kSiluMul, {gate, up}, {a});
    const TensorId down = linear(L + "down_proj", W + "mlp.down_proj", a, "down" + n, c_.hidden);
    const TensorId h_next = act("h." + std::to_string(l + 1), c_.hidden);
    op(L + "mlp_residual", OpKind::kResidualAdd, {h_mid, down}, {h_next});
    layer_ = -1;
    return h_next;
  }

  Attrs rope_attrs() const {
    Attrs a = {{"head_dim", c_.head_dim}, {"theta", c_.rope_theta}, {"rope_type", c_.rope_type}};
    if (c_.rope_type == "llama3") {
      a["factor"] = c_.rope_factor;
      a["low_freq_factor"] = c_.low_freq_factor;
      a["high_freq_factor"] = c_.high_freq_factor;
      a["original_max_position_embeddings"] = c_.original_max_position_embeddings;
    }
    return a;
  }

  // y [B, n] = linear(x, W [n, K]) with K the width of x, the weight `module`.weight
  // (and with `bias`, plus the bias `module`.bias [n]).
  TensorId linear(const std::string& name, const std::string& module, TensorId x, const std::string& out, int64_t n,
                  bool bias = false) {
    const int64_t k = p_.tensor(x).shape.back();
    const TensorId w = weight(module + ".weight", {n, k});
    const TensorId b = bias ? weight(module + ".bias", {n}) : -1;
    const TensorId y = act(out, n);
    if (bias)
      op(name, OpKind::kLinear, {x, w, b}, {y}, {{"bias", int64_t{1}}});
    else
      op(name, OpKind::kLinear, {x, w}, {y});
    return y;
  }

  TensorId add(const std::string& name, DType dt, std::vector<int64_t> shape, TensorRole role) {
    return p_.add_tensor(Tensor{name, dt, std::move(shape), role});
  }
  TensorId weight(const std::string& name, std::vector<int64_t> shape) {
    return add(name, DType::kBF16, std::move(shape), TensorRole::kWeight);
  }
  TensorId act(const std::string& name, int64_t width) {
    return add(name, DType::kBF16, {b_, width}, TensorRole::kActivation);
  }
  void op(const std::string& name, OpKind kind, std::vector<TensorId> in,
          std::vector<TensorId> out, Attrs attrs = {}) {
    p_.add_op(Operator{name, kind, std::move(in), std::move(out), std::move(attrs), layer_});
  }

  const ModelConfig& c_;
  const Architecture& arch_;
  const int64_t b_, s_, q_dim_, kv_dim_;
  int32_t layer_ = -1;
  Program p_;
};

// The sizes derived from the config, batch and sequence length, with checked arithmetic,
// against the bounds of limits.h.
void check_derived_sizes(const ModelConfig& c, int64_t batch, int64_t seq) {
  const Architecture& arch = *find_architecture(c.architecture);
  const std::string what = "import: the parameter count of " + c.name;
  const int64_t q_dim = checked_mul(c.num_q_heads, c.head_dim, what);
  const int64_t kv_dim = checked_mul(c.num_kv_heads, c.head_dim, what);
  const int64_t attention = checked_product({2, c.hidden, checked_add(q_dim, kv_dim, what)}, what);
  const int64_t mlp = checked_product({3, c.hidden, c.intermediate}, what);
  const int64_t norms = checked_add(checked_mul(2, c.hidden, what),
                                    arch.qk_norm ? checked_mul(2, c.head_dim, what) : 0, what);
  const int64_t biases = arch.qkv_bias ? checked_add(q_dim, checked_mul(2, kv_dim, what), what) : 0;
  const int64_t layer = checked_add(checked_add(checked_add(attention, mlp, what), norms, what), biases, what);
  const int64_t embeddings = checked_product({c.tied_embeddings ? 1 : 2, c.vocab, c.hidden}, what);
  const int64_t params = checked_add(checked_mul(c.num_layers, layer, what),
                                     checked_add(embeddings, c.hidden, what), what);
  if (params > kMaxParameters)
    throw Error(what + " is " + std::to_string(params) + ", over the limit of " +
                std::to_string(kMaxParameters));
  const int64_t kv_bytes = checked_product({2, c.num_layers, batch, seq, kv_dim, 2}, "import: the KV cache bytes");
  if (kv_bytes > kMaxKvCacheBytes)
    throw Error("import: the KV caches need " + std::to_string(kv_bytes) + " bytes (k and v of " +
                std::to_string(c.num_layers) + " layers, batch " + std::to_string(batch) +
                ", max_seq_len " + std::to_string(seq) + ", " + std::to_string(kv_dim) +
                " bf16 per position), over the limit of " + std::to_string(kMaxKvCacheBytes) +
                " bytes; lower max_seq_len or batch");
}

}  // namespace

int64_t resolve_max_seq_len(const ModelConfig& c, const ImportOptions& o) {
  if (o.max_seq_len < 0)
    throw Error("import: max_seq_len must be positive, got " + std::to_string(o.max_seq_len));
  if (o.max_seq_len == 0) return std::min(c.default_max_seq_len, c.max_position_embeddings);
  if (o.max_seq_len > c.max_position_embeddings)
    throw Error("import: max_seq_len " + std::to_string(o.max_seq_len) +
                " exceeds the model's max_position_embeddings (" +
                std::to_string(c.max_position_embeddings) + ")");
  return o.max_seq_len;
}

Module build_module(const ModelConfig& c, const ImportOptions& o, const std::string& source) {
  if (o.batch < 1 || o.batch > kMaxBatch)
    throw Error("import: batch must be in 1.." + std::to_string(kMaxBatch) + ", got " +
                std::to_string(o.batch));
  if (!find_architecture(c.architecture))
    throw Error("import: unsupported architecture \"" + c.architecture + "\"");
  const int64_t seq = resolve_max_seq_len(c, o);
  check_derived_sizes(c, o.batch, seq);

  Module m;
  m.name = c.name;
  m.attrs = {{"architecture", c.architecture},
             {"batch", o.batch},
             {"max_seq_len", seq},
             {"num_layers", c.num_layers},
             {"hidden", c.hidden},
             {"num_q_heads", c.num_q_heads},
             {"num_kv_heads", c.num_kv_heads},
             {"head_dim", c.head_dim},
             {"intermediate", c.intermediate},
             {"vocab", c.vocab},
             {"tied_embeddings", int64_t{c.tied_embeddings ? 1 : 0}},
             {"rms_eps", c.rms_eps}};
  m.program = ProgramBuilder(c, o.batch, seq).build();
  m.machine = o.machine;
  m.provenance.source = source;
  m.provenance.tool_version = tool_version();
  return m;
}

Module import_model(const std::string& spec, const ImportOptions& o) {
  const ModelSource s = resolve_model_source(spec);
  if (s.kind == ModelSourceKind::kModule)
    throw Error("import: '" + spec + "' is a module file; import takes a preset or a config.json");
  return load_model_source(s, o);
}

}  // namespace mpk
