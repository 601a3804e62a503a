// The naive f64 operators (naive_f64.h), each written straight from docs/ir.md.
#include "tests/runtime/naive_f64.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>
#include <stdexcept>
#include <string>

namespace mpk::naive {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Round to `digits` significant bits with exponents down to `min_exp` (below it the
// spacing stays 2^(min_exp - digits + 1): subnormals); beyond `max_finite`, infinity.
double round_to_precision(double x, int digits, int min_exp, double max_finite) {
  if (!std::isfinite(x) || x == 0) return x;
  const int e = std::max(std::ilogb(x), min_exp);
  const double quantum = std::ldexp(1.0, e - (digits - 1));
  const double r = std::nearbyint(x / quantum) * quantum;  // the default mode: ties to even
  return std::fabs(r) > max_finite ? std::copysign(kInf, x) : r;
}

// A storage value from its sign, exponent and mantissa fields.
double ieee_value(uint32_t sign, uint32_t exp, uint32_t mant, int exp_bits, int mant_bits) {
  const int bias = (1 << (exp_bits - 1)) - 1;
  const double s = sign ? -1.0 : 1.0;
  if (exp == (1u << exp_bits) - 1) return mant ? std::numeric_limits<double>::quiet_NaN() : s * kInf;
  if (exp == 0) return s * std::ldexp(static_cast<double>(mant), 1 - bias - mant_bits);
  return s * std::ldexp(1.0 + std::ldexp(static_cast<double>(mant), -mant_bits), static_cast<int>(exp) - bias);
}

double sigmoid_times(double g) { return g / (1.0 + std::exp(-g)); }

double dot(const double* a, const double* b, int64_t n) {
  double s = 0;
  for (int64_t k = 0; k < n; ++k) s += a[k] * b[k];
  return s;
}

bool has(const Attrs& a, const std::string& key) { return a.count(key) > 0; }

}  // namespace

double bf16_value(uint16_t bits) { return ieee_value(bits >> 15, (bits >> 7) & 0xff, bits & 0x7f, 8, 7); }

double f16_value(uint16_t bits) { return ieee_value(bits >> 15, (bits >> 10) & 0x1f, bits & 0x3ff, 5, 10); }

uint16_t bf16_bits(double value) {
  const float f = static_cast<float>(value);
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  if ((u & 0xffffu) != 0 || static_cast<double>(f) != value)
    throw std::logic_error("bf16_bits: " + std::to_string(value) + " is not a bf16 value");
  return static_cast<uint16_t>(u >> 16);
}

double round_to(DType dt, double x) {
  switch (dt) {
    case DType::kBF16: return round_to_precision(x, 8, -126, std::ldexp(255.0, 120));
    case DType::kF16: return round_to_precision(x, 11, -14, 65504.0);
    case DType::kF32: return round_to_precision(x, 24, -126, std::ldexp(16777215.0, 104));
    case DType::kI32: return x;
  }
  return x;
}

std::vector<double> rope_inverse_frequencies(const Attrs& a) {
  const int64_t hd = attr_int(a, "head_dim");
  const double theta = attr_float(a, "theta");
  const bool llama3 = attr_str_or(a, "rope_type", "default") == "llama3";
  std::vector<double> inv(static_cast<size_t>(hd / 2));
  for (int64_t i = 0; i < hd / 2; ++i) {
    const double base = std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(hd));
    inv[i] = base;
    if (!llama3) continue;
    const double factor = attr_float(a, "factor"), low = attr_float(a, "low_freq_factor");
    const double high = attr_float(a, "high_freq_factor");
    const double orig = attr_float(a, "original_max_position_embeddings");
    const double lo = orig / low, hi = orig / high, w = 2 * std::numbers::pi / base;
    if (w < hi) continue;
    if (w > lo) {
      inv[i] = base / factor;
    } else {
      const double s = (orig / w - low) / (high - low);
      inv[i] = (1 - s) * base / factor + s * base;
    }
  }
  return inv;
}

void rope_head(double* x, int64_t hd, const std::vector<double>& inv, int64_t pos) {
  const int64_t half = hd / 2;
  for (int64_t i = 0; i < half; ++i) {
    const double a = static_cast<double>(pos) * inv[i];
    const double lo = x[i], hi = x[i + half];
    x[i] = lo * std::cos(a) - hi * std::sin(a);
    x[i + half] = hi * std::cos(a) + lo * std::sin(a);
  }
}

std::vector<double> rms_norm_row(const double* x, const double* w, int64_t n, double eps) {
  double mean_square = 0;
  for (int64_t i = 0; i < n; ++i) mean_square += x[i] * x[i];
  mean_square /= static_cast<double>(n);
  const double r = 1.0 / std::sqrt(mean_square + eps);
  std::vector<double> y(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * r * w[i];
  return y;
}

std::vector<double> prepare_head(std::vector<double> head, const double* norm_w, double eps,
                                 const std::vector<double>* inv, int64_t pos) {
  const int64_t hd = static_cast<int64_t>(head.size());
  if (norm_w) {
    head = rms_norm_row(head.data(), norm_w, hd, eps);
    for (double& v : head) v = round_to(DType::kBF16, v);
  }
  if (inv) rope_head(head.data(), hd, *inv, pos);
  return head;
}

AttentionPartial attend(const std::vector<double>& q, const Tensor64& kc, const Tensor64& vc, int64_t b,
                        int64_t h, int64_t t0, int64_t t1, int64_t pos, double scale) {
  const int64_t seq = kc.shape[1], nkv = kc.shape[2], hd = kc.shape[3];
  const int64_t end = std::min(t1, pos + 1);
  AttentionPartial r{std::vector<double>(static_cast<size_t>(hd), 0.0), -kInf, 0.0};
  if (end <= t0) return r;
  auto row = [&](int64_t t) { return ((b * seq + t) * nkv + h) * hd; };
  std::vector<double> score;
  for (int64_t t = t0; t < end; ++t) score.push_back(scale * dot(q.data(), kc.v.data() + row(t), hd));
  for (double s : score) r.m = std::max(r.m, s);
  for (int64_t t = t0; t < end; ++t) {
    const double p = std::exp(score[t - t0] - r.m);
    r.l += p;
    for (int64_t d = 0; d < hd; ++d) r.o[d] += p * vc.v[row(t) + d];
  }
  for (double& o : r.o) o /= r.l;
  return r;
}

std::vector<double> merge(const std::vector<AttentionPartial>& parts) {
  double big = -kInf;
  for (const AttentionPartial& p : parts) big = std::max(big, p.m);
  std::vector<double> num(parts.front().o.size(), 0.0);
  double den = 0;
  for (const AttentionPartial& p : parts) {
    if (p.l == 0) continue;  // an empty range: weight 0 (and exp(-inf - M) would be 0 too)
    const double w = p.l * std::exp(p.m - big);
    den += w;
    for (size_t d = 0; d < num.size(); ++d) num[d] += w * p.o[d];
  }
  for (double& v : num) v /= den;
  return num;
}

ArgmaxPartial argmax_range(const double* row, int64_t v0, int64_t v1) {
  ArgmaxPartial best{-kInf, v0};
  for (int64_t v = v0; v < v1; ++v)
    if (row[v] > best.value) best = {row[v], v};
  return best;
}

ArgmaxPartial argmax_reduce(const std::vector<ArgmaxPartial>& parts) {
  ArgmaxPartial best = parts.front();
  for (const ArgmaxPartial& p : parts)
    if (p.value > best.value || (p.value == best.value && p.index < best.index)) best = p;
  return best;
}

Interpreter::Interpreter(const Program& p, const Weights& w) : p_(p) {
  for (const Tensor& t : p.tensors) {
    Tensor64 x{t.dtype, t.shape, std::vector<double>(static_cast<size_t>(t.num_elements()), 0.0)};
    if (t.role == TensorRole::kWeight) {
      const WeightTensor& wt = w.get(t.name);
      for (size_t i = 0; i < x.v.size(); ++i) {
        const auto* raw = static_cast<const unsigned char*>(wt.data);
        uint16_t h;
        float f;
        switch (wt.dtype) {
          case DType::kBF16: std::memcpy(&h, raw + 2 * i, 2), x.v[i] = bf16_value(h); break;
          case DType::kF16: std::memcpy(&h, raw + 2 * i, 2), x.v[i] = f16_value(h); break;
          case DType::kF32: std::memcpy(&f, raw + 4 * i, 4), x.v[i] = f; break;
          case DType::kI32: throw std::logic_error("integer weights");
        }
      }
    }
    tensors_.push_back(std::move(x));
  }
}

void Interpreter::run_op(OpId id, int64_t step, const std::vector<int64_t>& prompt, int64_t prompt_rows) {
  const Operator& op = p_.ops[id];
  auto in = [&](size_t i) -> Tensor64& { return tensors_.at(op.inputs[i]); };
  Tensor64& y = tensors_.at(op.outputs[0]);
  const int64_t rows = y.shape[0], pos = step;
  switch (op.kind) {
    case OpKind::kEmbedding: {
      const int64_t hidden = y.shape[1];
      for (int64_t b = 0; b < rows; ++b) {
        const int64_t len = static_cast<int64_t>(prompt.size()) / prompt_rows;
        const auto tok = step < len ? prompt[(prompt_rows == 1 ? 0 : b) * len + step] : static_cast<int64_t>(in(1).v[b]);
        for (int64_t c = 0; c < hidden; ++c) y.store(b * hidden + c, in(0).v[tok * hidden + c]);
      }
      return;
    }
    case OpKind::kRmsNorm: {
      const int64_t n = y.shape[1];
      for (int64_t b = 0; b < rows; ++b) {
        const std::vector<double> r = rms_norm_row(&in(0).v[b * n], in(1).v.data(), n, attr_float(op.attrs, "eps"));
        for (int64_t i = 0; i < n; ++i) y.store(b * n + i, r[i]);
      }
      return;
    }
    case OpKind::kLinear:
    case OpKind::kLmHead:
      linear(op);
      return;
    case OpKind::kQkNorm: {
      const int64_t hd = attr_int(op.attrs, "head_dim"), width = y.shape[1];
      for (int64_t b = 0; b < rows; ++b)
        for (int64_t c = 0; c < width; c += hd) {
          const std::vector<double> r =
              rms_norm_row(&in(0).v[b * width + c], in(1).v.data(), hd, attr_float(op.attrs, "eps"));
          for (int64_t i = 0; i < hd; ++i) y.store(b * width + c + i, r[i]);
        }
      return;
    }
    case OpKind::kRope: {
      const int64_t hd = attr_int(op.attrs, "head_dim"), width = y.shape[1];
      const std::vector<double> inv = rope_inverse_frequencies(op.attrs);
      for (int64_t b = 0; b < rows; ++b)
        for (int64_t c = 0; c < width; c += hd) {
          std::vector<double> head(&in(0).v[b * width + c], &in(0).v[b * width + c + hd]);
          rope_head(head.data(), hd, inv, pos);
          for (int64_t i = 0; i < hd; ++i) y.store(b * width + c + i, head[i]);
        }
      return;
    }
    case OpKind::kKvAppend: {
      Tensor64& vc = tensors_.at(op.outputs[1]);
      const int64_t seq = y.shape[1], nkv = y.shape[2], hd = y.shape[3];
      const bool roped = has(op.attrs, "theta");  // fuse-rope: k roped as `rope` does
      const std::vector<double> inv = roped ? rope_inverse_frequencies(op.attrs) : std::vector<double>{};
      for (int64_t b = 0; b < rows; ++b)
        for (int64_t h = 0; h < nkv; ++h) {
          const int64_t src = b * nkv * hd + h * hd, dst = ((b * seq + pos) * nkv + h) * hd;
          std::vector<double> k(&in(0).v[src], &in(0).v[src + hd]);
          if (roped) rope_head(k.data(), hd, inv, pos);
          for (int64_t d = 0; d < hd; ++d) {
            y.store(dst + d, k[d]);
            vc.store(dst + d, in(1).v[src + d]);
          }
        }
      return;
    }
    case OpKind::kAttention:
      attention(op, pos);
      return;
    case OpKind::kSiluMul:
      for (size_t i = 0; i < y.v.size(); ++i) y.store(i, sigmoid_times(in(0).v[i]) * in(1).v[i]);
      return;
    case OpKind::kResidualAdd:
    case OpKind::kAllReduce:  // the interpreter runs one rank: its partial is the whole sum
      for (size_t i = 0; i < y.v.size(); ++i) y.store(i, in(0).v[i] + in(1).v[i]);
      return;
    case OpKind::kArgmax: {
      const int64_t vocab = in(0).shape[1];
      for (int64_t b = 0; b < in(0).shape[0]; ++b) y.store(b, argmax_range(&in(0).v[b * vocab], 0, vocab).index);
      return;
    }
  }
}

// linear / lm_head in every form of docs/ir.md: plain (x, W); with a bias (x, W,
// bias){bias=1}, then any of the rest; with a residual (x, W, residual); with a norm
// (x, W, norm_w){eps}; swiglu (x, Wg, Wu[, norm_w]){activation, [eps]}; an lm_head with
// argmax has a second output, the tokens.
void Interpreter::linear(const Operator& op) {
  const bool swiglu = attr_str_or(op.attrs, "activation", "") == "swiglu";
  const bool normed = has(op.attrs, "eps"), biased = has(op.attrs, "bias");
  const size_t extra = (swiglu ? 3 : 2) + (biased ? 1 : 0);  // the input after W (Wu) and the bias
  const Tensor64& x = tensors_.at(op.inputs[0]);
  const Tensor64& w = tensors_.at(op.inputs[1]);
  const Tensor64* up = swiglu ? &tensors_.at(op.inputs[2]) : nullptr;
  const Tensor64* bias = biased ? &tensors_.at(op.inputs[extra - 1]) : nullptr;
  const Tensor64* norm_w = normed ? &tensors_.at(op.inputs[extra]) : nullptr;
  const Tensor64* residual =
      !swiglu && !normed && op.inputs.size() == extra + 1 ? &tensors_.at(op.inputs[extra]) : nullptr;
  Tensor64& y = tensors_.at(op.outputs[0]);
  const int64_t rows = x.shape[0], k_len = x.shape[1], n_len = y.shape[1];
  for (int64_t b = 0; b < rows; ++b) {
    std::vector<double> xs(&x.v[b * k_len], &x.v[(b + 1) * k_len]);
    if (norm_w) {
      xs = rms_norm_row(xs.data(), norm_w->v.data(), k_len, attr_float(op.attrs, "eps"));
      for (double& v : xs) v = round_to(DType::kBF16, v);  // the rms_norm's bf16 output
    }
    for (int64_t n = 0; n < n_len; ++n) {
      const double product = dot(xs.data(), &w.v[n * k_len], k_len) + (bias ? bias->v[n] : 0.0);
      double value = product;
      if (swiglu) {
        const double g = round_to(DType::kBF16, product);
        const double u = round_to(DType::kBF16, dot(xs.data(), &up->v[n * k_len], k_len));
        value = sigmoid_times(g) * u;
      } else if (residual) {
        value = round_to(y.dtype, product) + residual->v[b * n_len + n];
      }
      y.store(b * n_len + n, value);
    }
  }
  if (op.outputs.size() == 2) {  // fuse-argmax: tokens = argmax(logits as stored)
    Tensor64& tokens = tensors_.at(op.outputs[1]);
    for (int64_t b = 0; b < rows; ++b) tokens.store(b, argmax_range(&y.v[b * n_len], 0, n_len).index);
  }
}

// attention(q, k_cache, v_cache), or fused (q, k, v, k_cache, v_cache[, q_norm_w,
// k_norm_w]) with the rope attrs: k and v appended at pos first (k normed and roped),
// then q normed and roped and rounded to bf16, then attention over 0..pos.
void Interpreter::attention(const Operator& op, int64_t pos) {
  const bool fused = op.inputs.size() >= 5;
  const bool normed = op.inputs.size() == 7;
  Tensor64& y = tensors_.at(op.outputs[0]);
  Tensor64& kc = tensors_.at(op.inputs[fused ? 3 : 1]);
  Tensor64& vc = tensors_.at(op.inputs[fused ? 4 : 2]);
  const Tensor64& q = tensors_.at(op.inputs[0]);
  const int64_t nq = attr_int(op.attrs, "num_q_heads"), nkv = attr_int(op.attrs, "num_kv_heads");
  const int64_t hd = attr_int(op.attrs, "head_dim"), seq = kc.shape[1], rows = y.shape[0];
  const double scale = attr_float(op.attrs, "scale"), eps = normed ? attr_float(op.attrs, "eps") : 0;
  const std::vector<double> inv = fused ? rope_inverse_frequencies(op.attrs) : std::vector<double>{};
  const double* q_norm = normed ? tensors_.at(op.inputs[5]).v.data() : nullptr;
  const double* k_norm = normed ? tensors_.at(op.inputs[6]).v.data() : nullptr;
  if (fused) {
    const Tensor64 &k = tensors_.at(op.inputs[1]), &v = tensors_.at(op.inputs[2]);
    for (int64_t b = 0; b < rows; ++b)
      for (int64_t h = 0; h < nkv; ++h) {
        const int64_t src = b * nkv * hd + h * hd, dst = ((b * seq + pos) * nkv + h) * hd;
        const std::vector<double> kr = prepare_head({&k.v[src], &k.v[src + hd]}, k_norm, eps, &inv, pos);
        for (int64_t d = 0; d < hd; ++d) {
          kc.store(dst + d, kr[d]);
          vc.store(dst + d, v.v[src + d]);
        }
      }
  }
  for (int64_t b = 0; b < rows; ++b)
    for (int64_t j = 0; j < nq; ++j) {
      std::vector<double> qh(&q.v[b * nq * hd + j * hd], &q.v[b * nq * hd + (j + 1) * hd]);
      if (fused) {
        qh = prepare_head(qh, q_norm, eps, &inv, pos);
        for (double& e : qh) e = round_to(DType::kBF16, e);  // as the roped q is stored
      }
      const AttentionPartial a = attend(qh, kc, vc, b, j / (nq / nkv), 0, pos + 1, pos, scale);
      for (int64_t d = 0; d < hd; ++d) y.store(b * nq * hd + j * hd + d, a.o[d]);
    }
}

ModelRun run_model(const Module& m, const Weights& w, int64_t steps, const std::vector<int64_t>& prompt,
                   int64_t prompt_rows) {
  const Program& p = m.program;
  TensorId tokens = -1, logits = -1;
  for (const Operator& op : p.ops) {
    if (op.kind == OpKind::kEmbedding) tokens = op.inputs[1];
    if (op.kind == OpKind::kArgmax) logits = op.inputs[0];
    if (op.kind == OpKind::kLmHead && op.outputs.size() == 2) logits = op.outputs[0];
  }
  if (tokens < 0 || logits < 0) throw std::logic_error("run_model: no embedding or no argmax");
  Interpreter it(p, w);
  ModelRun run;
  for (int64_t s = 0; s < steps; ++s) {
    for (OpId id = 0; id < static_cast<OpId>(p.ops.size()); ++id) it.run_op(id, s, prompt, prompt_rows);
    run.tokens.emplace_back(it.at(tokens).v.begin(), it.at(tokens).v.end());
    const Tensor64& l = it.at(logits);
    const int64_t vocab = l.shape[1];
    run.top_logits.emplace_back();
    for (int64_t b = 0; b < l.shape[0]; ++b)
      run.top_logits.back().push_back(argmax_range(&l.v[b * vocab], 0, vocab).value);
    run.step_logits.push_back(l.v);
  }
  run.logits = it.at(logits).v;
  return run;
}

}  // namespace mpk::naive
