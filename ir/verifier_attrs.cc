// structure.batch, structure.vocab and structure.module-attr (ir/verifier_rules.h): one batch
// for the whole step (the first dimension of every non-weight tensor, docs/ir.md
// "Tensors"; chunk rows per sequence outside the KV caches, "Prefill chunks"), tokens that index the embedding table that reads them, and the
// module attrs (docs/ir.md "Module") of the right type and equal to what the tensors and
// operators say: the megakernel sizes its work by the attrs `batch`, `vocab` and
// `max_seq_len`, so an attr that disagrees with the tensors would make it compute rows,
// logits or positions that are not there.
#include <cmath>
#include <variant>

#include "ir/architectures.h"
#include "ir/ops/tensor_parallel.h"
#include "ir/verifier_rules.h"

namespace mpk {
namespace {

class AttrChecker {
 public:
  AttrChecker(const Module& m, DiagnosticSink& sink) : m_(m), p_(m.program), sink_(sink) {}

  void run() {
    batch();
    for (const char* key : {"batch", "chunk", "max_seq_len", "num_layers", "hidden", "num_q_heads", "num_kv_heads",
                            "head_dim", "intermediate", "vocab"})
      positive(key);
    if (int_attr("tied_embeddings") && (*int_attr("tied_embeddings") < 0 || *int_attr("tied_embeddings") > 1))
      bad("tied_embeddings", "must be 0 or 1, is " + std::to_string(*int_attr("tied_embeddings")));
    if (has("rms_eps")) {
      const auto* d = std::get_if<double>(&m_.attrs.at("rms_eps"));
      if (!d || !(*d > 0) || !std::isfinite(*d)) bad("rms_eps", "must be a positive finite float");
    }
    if (has("tp")) {
      const int64_t* v = int_attr("tp");
      if (!v || *v < 1 || *v > kMaxTpRanks)
        bad("tp", "must be an integer in 1.." + std::to_string(kMaxTpRanks));
    }
    if (has("architecture")) {
      const auto* s = std::get_if<std::string>(&m_.attrs.at("architecture"));
      if (!s || !find_architecture(*s)) bad("architecture", "must be one of " + architecture_names());
    }
    if (!sink_.empty()) return;
    against_program();
  }

 private:
  bool has(const char* key) const { return m_.attrs.count(key) > 0; }
  const int64_t* int_attr(const char* key) const {
    auto it = m_.attrs.find(key);
    return it == m_.attrs.end() ? nullptr : std::get_if<int64_t>(&it->second);
  }
  void bad(const std::string& key, const std::string& what) {
    sink_.add("structure.module-attr", "module attr " + key + " " + what);
  }
  void positive(const char* key) {
    if (!has(key)) return;
    const int64_t* v = int_attr(key);
    if (!v || *v <= 0) bad(key, v ? "must be positive, is " + std::to_string(*v) : "must be an integer");
  }
  // The attr `key`, when present, equals `value` (what `source` says).
  void agrees(const char* key, int64_t value, const std::string& source) {
    const int64_t* v = int_attr(key);
    if (v && *v != value)
      bad(key, "is " + std::to_string(*v) + ", but " + source + " says " + std::to_string(value));
  }
  // An LM head's or argmax's logits width: one rank's share where it is split by vocabulary.
  void vocab_width(const Operator& op, int64_t width, const std::string& who) {
    if (attr_str_or(op.attrs, "parallel", "") == "column")
      agrees_sharded("vocab", width, who + " (its logits width)");
    else
      agrees("vocab", width, who + " (its logits width)");
  }
  // The same for a size that each rank of a sharded module holds one tp-th of.
  void agrees_sharded(const char* key, int64_t per_rank, const std::string& source) {
    const int64_t tp = tp_ranks(m_);
    agrees(key, per_rank * tp, tp > 1 ? source + " (x tp " + std::to_string(tp) + ")" : source);
  }
  int64_t dim(TensorId t, size_t d) const { return p_.tensors[t].shape[d]; }
  const std::string& name(TensorId t) const { return p_.tensors[t].name; }

  // Dimension 0 of every non-weight tensor: the batch for the KV caches, batch x chunk rows
  // (docs/ir.md "Prefill chunks") for the others.
  void batch() {
    const int64_t* c = int_attr("chunk");
    const int64_t chunk = c && *c > 0 ? *c : 1;
    TensorId first_rows = -1, first_cache = -1;
    for (size_t t = 0; t < p_.tensors.size(); ++t) {
      const Tensor& tt = p_.tensors[t];
      if (tt.role == TensorRole::kWeight || tt.shape.empty()) continue;
      TensorId& first = tt.role == TensorRole::kKvCache ? first_cache : first_rows;
      if (first < 0) {
        first = static_cast<TensorId>(t);
      } else if (tt.shape[0] != dim(first, 0)) {
        sink_.add("structure.batch", "tensor '" + tt.name + "' has batch (dimension 0) " +
                                         std::to_string(tt.shape[0]) + ", tensor '" + name(first) + "' has " +
                                         std::to_string(dim(first, 0)) +
                                         ": every non-weight tensor's first dimension is the batch");
      }
    }
    if (first_cache >= 0 && first_rows >= 0 && dim(first_rows, 0) != dim(first_cache, 0) * chunk)
      sink_.add("structure.batch", "tensor '" + name(first_rows) + "' has " + std::to_string(dim(first_rows, 0)) +
                                       " rows, but the cache '" + name(first_cache) + "' holds " +
                                       std::to_string(dim(first_cache, 0)) + " sequences of " +
                                       std::to_string(chunk) + " row(s) (attr chunk)");
    if (first_rows >= 0 && dim(first_rows, 0) % chunk == 0)
      agrees("batch", dim(first_rows, 0) / chunk,
             "tensor '" + name(first_rows) + "' (dimension 0" + (chunk > 1 ? " / chunk)" : ")"));
    else if (first_cache >= 0)
      agrees("batch", dim(first_cache, 0), "tensor '" + name(first_cache) + "' (dimension 0)");
  }

  // A prefill chunk only fills the caches (docs/ir.md "Prefill chunks").
  void no_head_in_chunk(const std::string& who) {
    const int64_t* c = int_attr("chunk");
    if (c && *c > 1) bad("chunk", "is " + std::to_string(*c) + ": a prefill chunk has no LM head or argmax, but " + who + " is one");
  }

  // Each operator's view of the model facts (signatures hold, so shapes have their ranks).
  void against_program() {
    int64_t layers = 0;
    TensorId table = -1, head = -1;  // the embedding's table, the lm_head's weight
    for (const Operator& op : p_.ops) {
      const std::string who = "operator '" + op.name + "'";
      switch (op.kind) {
        case OpKind::kEmbedding:
          agrees("hidden", dim(op.outputs[0], 1), who + " (its output width)");
          agrees("vocab", dim(op.inputs[0], 0), who + " (its table rows)");
          table = op.inputs[0];
          break;
        case OpKind::kLmHead:
          no_head_in_chunk(who);
          vocab_width(op, dim(op.outputs[0], 1), who);
          head = op.inputs[1];
          break;
        case OpKind::kArgmax:
          no_head_in_chunk(who);
          vocab_width(op, dim(op.inputs[0], 1), who);
          break;
        case OpKind::kKvAppend:
          agrees("max_seq_len", dim(op.outputs[0], 1), who + " (its cache positions)");
          break;
        case OpKind::kAttention: {
          ++layers;
          const AttentionForm f = attention_form(op);
          agrees("max_seq_len", dim(f.k_cache, 1), who + " (its cache positions)");
          agrees_sharded("num_q_heads", attr_int(op.attrs, "num_q_heads"), who);
          agrees_sharded("num_kv_heads", attr_int(op.attrs, "num_kv_heads"), who);
          agrees("head_dim", attr_int(op.attrs, "head_dim"), who);
          break;
        }
        case OpKind::kSiluMul:
          agrees_sharded("intermediate", dim(op.outputs[0], 1), who + " (its output width)");
          break;
        case OpKind::kLinear:
          if (linear_form(op).swiglu())
            agrees_sharded("intermediate", dim(op.outputs[0], 1), who + " (its output width)");
          break;
        default:
          break;
      }
    }
    if (!p_.ops.empty()) agrees("num_layers", layers, "the program (its attention operators)");
    token_range();
    if (table >= 0 && head >= 0)
      agrees("tied_embeddings", head == table, "the lm_head (whether it reads the embedding table)");
  }

  // The tokens an argmax writes (below its logits width) index the table of every
  // embedding that reads them: a token past the table would be read out of bounds.
  void token_range() {
    std::vector<OpId> writer(p_.tensors.size(), -1);  // the argmax that writes each tokens tensor
    std::vector<int64_t> bound(p_.tensors.size(), 0);    // the widest logits it comes from
    for (size_t o = 0; o < p_.ops.size(); ++o) {
      const Operator& op = p_.ops[o];
      const TensorId tokens = op.kind == OpKind::kArgmax ? op.outputs[0] : linear_form(op).tokens;
      if (tokens < 0) continue;
      const int64_t width = (op.kind == OpKind::kArgmax ? dim(op.inputs[0], 1) : dim(op.outputs[0], 1)) *
                            (vocab_parallel(op) ? tp_ranks(m_) : 1);
      if (width > bound[tokens]) bound[tokens] = width, writer[tokens] = static_cast<OpId>(o);
    }
    for (const Operator& op : p_.ops) {
      if (op.kind != OpKind::kEmbedding) continue;
      const TensorId tokens = op.inputs[1];
      const int64_t rows = dim(op.inputs[0], 0);
      if (bound[tokens] > rows)
        sink_.add("structure.vocab", "operator '" + p_.ops[writer[tokens]].name + "' writes tokens '" +
                                         name(tokens) + "' below " + std::to_string(bound[tokens]) +
                                         ", but operator '" + op.name + "' reads them as rows of a table of " +
                                         std::to_string(rows) + " rows");
    }
  }

  const Module& m_;
  const Program& p_;
  DiagnosticSink& sink_;
};

}  // namespace

void check_module_attrs(const Module& m, DiagnosticSink& sink) { AttrChecker(m, sink).run(); }

}  // namespace mpk
