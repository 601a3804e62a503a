// Operator arithmetic on blocks; see numerics.h for the evaluation-order rules.
#include "runtime/cpu/numerics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "ir/error.h"
#include "ir/rope.h"
#include "runtime/cpu/lane_order.h"
#include "runtime/cpu/run_common.h"

namespace mpk {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Scores, softmax statistics and the normalized output of one query head over
// positions [t0, t1) (t1 > t0): o[0:hd], m, l as docs/ir.md defines for partials.
// `b` is the caches' row (the sequence). Position `cur` (when >= 0) comes from cur_k /
// cur_v instead of the caches.
void attend(const float* q, const TensorBuffer& kc, const TensorBuffer& vc, int64_t b, int64_t h,
            int64_t t0, int64_t t1, int64_t hd, float scale, float* o, float* m_out, float* l_out,
            int64_t cur = -1, const float* cur_k = nullptr, const float* cur_v = nullptr) {
  const int64_t seq = kc.shape[1], nkv = kc.shape[2];
  std::vector<float>& s = thread_scratch(1, static_cast<size_t>(t1 - t0));
  std::vector<float>& row = thread_scratch(2, static_cast<size_t>(hd));
  auto load = [&](const TensorBuffer& cache, const float* current, int64_t t) {
    if (current && t == cur)
      std::copy(current, current + hd, row.begin());
    else
      cache.load_row(((b * seq + t) * nkv + h) * hd, hd, row.data());
  };
  float m = kNegInf;
  for (int64_t t = t0; t < t1; ++t) {
    load(kc, cur_k, t);
    const float sc = scale * lane_dot(q, row.data(), hd);
    s[t - t0] = sc;
    if (sc > m) m = sc;
  }
  for (int64_t d = 0; d < hd; ++d) o[d] = 0;
  float l = 0;
  for (int64_t t = t0; t < t1; ++t) {
    const float p = std::exp(s[t - t0] - m);
    l += p;
    load(vc, cur_v, t);
    for (int64_t d = 0; d < hd; ++d) o[d] += p * row[d];
  }
  for (int64_t d = 0; d < hd; ++d) o[d] = o[d] / l;
  *m_out = m;
  *l_out = l;
}

}  // namespace

StepRecorder::StepRecorder(int64_t steps, int64_t batch)
    : steps_(steps), batch_(batch), tokens_(steps * batch, -1), top_(steps * batch, 0),
      done_ns_(steps), rows_(steps), non_finite_(steps * batch) {
  for (auto& d : done_ns_) d.store(0);
  for (auto& r : rows_) r.store(0);
  for (auto& n : non_finite_) n.store(false);
}

void StepRecorder::mark_non_finite(int64_t step, int64_t row) {
  if (step >= 0 && step < steps_ && row >= 0 && row < batch_)
    non_finite_[step * batch_ + row].store(true, std::memory_order_relaxed);
}

std::pair<int64_t, int64_t> StepRecorder::first_non_finite() const {
  for (int64_t i = 0; i < steps_ * batch_; ++i)
    if (non_finite_[i].load(std::memory_order_relaxed)) return {i / batch_, i % batch_};
  return {-1, -1};
}

void StepRecorder::record(int64_t step, int64_t row, int32_t token, float top_logit) {
  if (step < 0 || step >= steps_ || row < 0 || row >= batch_) return;
  tokens_[step * batch_ + row] = token;
  top_[step * batch_ + row] = top_logit;
  const int64_t t = now_ns();
  int64_t prev = done_ns_[step].load();
  while (prev < t && !done_ns_[step].compare_exchange_weak(prev, t)) {
  }
  rows_[step].fetch_add(1, std::memory_order_release);
}

double StepRecorder::finished_s(int64_t step, std::chrono::steady_clock::time_point start) const {
  const int64_t s0 = std::chrono::duration_cast<std::chrono::nanoseconds>(start.time_since_epoch()).count();
  return static_cast<double>(done_ns_[step].load() - s0) * 1e-9;
}

void embedding_block(const TensorBuffer& table, const TensorBuffer& tokens, TensorBuffer& y,
                     int64_t b0, int64_t b1, int64_t c0, int64_t c1, const StepContext& ctx) {
  const int64_t vocab = table.shape[0], hidden = table.shape[1];
  const std::vector<int64_t>& prompt = *ctx.prompt;
  const RowPositions at = ctx.rows();
  for (int64_t b = b0; b < b1; ++b) {
    const int64_t pos = at.pos(b);
    const int64_t tok = pos < prompt_length(prompt, ctx.prompt_rows)
                            ? prompt_token(prompt, ctx.prompt_rows, at.seq(b), pos)
                            : tokens.load_i32(b);
    if (tok < 0 || tok >= vocab)
      throw Error("embedding: token " + std::to_string(tok) + " of batch row " + std::to_string(b) +
                  " at position " + std::to_string(pos) + " is outside the vocabulary [0, " +
                  std::to_string(vocab) + ")");
    for (int64_t c = c0; c < c1; ++c) y.store(b * y.shape[1] + c, table.load(tok * hidden + c));
  }
}

std::vector<float>& thread_scratch(int which, size_t n) {
  thread_local std::vector<float> buf[5];
  if (buf[which].size() < n) buf[which].resize(n);
  return buf[which];
}

float rms_scale(const float* row, int64_t h, double eps) {
  const float ss = lane_sum_squares(row, h);
  return 1.0f / std::sqrt(ss / static_cast<float>(h) + static_cast<float>(eps));
}

float silu_mul_value(float g, float u) { return g / (1.0f + std::exp(-g)) * u; }

void rms_norm_block(const TensorBuffer& x, const TensorBuffer& w, TensorBuffer& y, int64_t b0,
                    int64_t b1, double eps) {
  const int64_t h = x.shape[1];
  std::vector<float>& row = thread_scratch(0, static_cast<size_t>(h));
  for (int64_t b = b0; b < b1; ++b) {
    x.load_row(b * h, h, row.data());
    const float r = rms_scale(row.data(), h, eps);
    for (int64_t i = 0; i < h; ++i) y.store(b * h + i, row[i] * r * w.load(i));
  }
}

namespace {

// row[0:hd] = row * rms_scale(row) * w: one head of qk_norm in f32 (the caller rounds).
void norm_head(float* row, int64_t hd, const TensorBuffer& w, double eps) {
  const float r = rms_scale(row, hd, eps);
  for (int64_t i = 0; i < hd; ++i) row[i] = row[i] * r * w.load(i);
}

}  // namespace

void qk_norm_block(const TensorBuffer& x, const TensorBuffer& w, TensorBuffer& y, int64_t b0,
                   int64_t b1, int64_t c0, int64_t c1, int64_t head_dim, double eps) {
  const int64_t width = x.shape[1];
  std::vector<float>& row = thread_scratch(0, static_cast<size_t>(head_dim));
  for (int64_t b = b0; b < b1; ++b) {
    for (int64_t c = c0; c < c1; c += head_dim) {
      x.load_row(b * width + c, head_dim, row.data());
      norm_head(row.data(), head_dim, w, eps);
      for (int64_t i = 0; i < head_dim; ++i) y.store(b * width + c + i, row[i]);
    }
  }
}

namespace {

// Rotate-half RoPE of one head `row` (f32) into out[0:head_dim] (f32; the caller rounds).
void rope_head(const float* row, int64_t head_dim, const std::vector<float>& cs, float* out) {
  const int64_t half = head_dim / 2;
  for (int64_t i = 0; i < half; ++i) {
    const float co = cs[2 * i], si = cs[2 * i + 1];
    out[i] = row[i] * co - row[i + half] * si;
    out[i + half] = row[i + half] * co + row[i] * si;
  }
}

// One q or k head (f32, loaded from its tensor) through `prep` into out[0:hd], before the
// final rounding: the normed head rounded to bf16, then roped at the angles `cs`. `row`
// is overwritten.
void prep_head(float* row, int64_t hd, const HeadPrep& prep, const std::vector<float>& cs, float* out) {
  if (prep.norm) {
    norm_head(row, hd, *prep.norm, prep.eps);
    for (int64_t i = 0; i < hd; ++i) row[i] = round_bf16(row[i]);
  }
  if (prep.rope_inv)
    rope_head(row, hd, cs, out);
  else
    std::copy(row, row + hd, out);
}

// The (cos, sin) table of `prep` at pos, when it ropes.
void prep_angles(const HeadPrep& prep, int64_t pos, std::vector<float>& cs) {
  if (prep.rope_inv) rope_cos_sin_at(*prep.rope_inv, pos, cs.data());
}

// Kv head h of batch row b at pos as kv_append stores it, before the caches' rounding:
// k prepared into k_out, v as it is into v_out ([hd] each).
void appended_row(const TensorBuffer& k, const TensorBuffer& v, int64_t b, int64_t h, int64_t hd, int64_t pos,
                  const HeadPrep& prep, float* k_out, float* v_out) {
  std::vector<float>& cs = thread_scratch(3, static_cast<size_t>(hd));
  std::vector<float>& row = thread_scratch(4, static_cast<size_t>(hd));
  prep_angles(prep, pos, cs);
  const int64_t src = b * k.shape[1] + h * hd;
  k.load_row(src, hd, row.data());
  prep_head(row.data(), hd, prep, cs, k_out);
  v.load_row(src, hd, v_out);
}

}  // namespace

void rope_block(const TensorBuffer& x, TensorBuffer& y, int64_t b0, int64_t b1, int64_t c0,
                int64_t c1, int64_t head_dim, const std::vector<float>& inv, const RowPositions& at) {
  const int64_t width = x.shape[1];
  std::vector<float>& cs = thread_scratch(1, static_cast<size_t>(head_dim));
  std::vector<float>& row = thread_scratch(0, static_cast<size_t>(head_dim));
  std::vector<float>& out = thread_scratch(2, static_cast<size_t>(head_dim));
  for (int64_t b = b0; b < b1; ++b) {
    rope_cos_sin_at(inv, at.pos(b), cs.data());
    for (int64_t c = c0; c < c1; c += head_dim) {
      x.load_row(b * width + c, head_dim, row.data());
      rope_head(row.data(), head_dim, cs, out.data());
      for (int64_t i = 0; i < head_dim; ++i) y.store(b * width + c + i, out[i]);
    }
  }
}

void kv_append_block(const TensorBuffer& k, const TensorBuffer& v, TensorBuffer& kc,
                     TensorBuffer& vc, int64_t b0, int64_t b1, int64_t h0, int64_t h1, const RowPositions& at,
                     const HeadPrep& prep) {
  const int64_t seq = kc.shape[1], nkv = kc.shape[2], hd = kc.shape[3];
  std::vector<float> k_row(static_cast<size_t>(hd)), v_row(static_cast<size_t>(hd));
  for (int64_t b = b0; b < b1; ++b) {
    if (!at.stores(b)) continue;
    const int64_t pos = at.pos(b);
    if (pos < 0 || pos >= seq)
      throw Error("kv_append: position " + std::to_string(pos) + " is past max_seq_len " +
                  std::to_string(seq));
    for (int64_t h = h0; h < h1; ++h) {
      appended_row(k, v, b, h, hd, pos, prep, k_row.data(), v_row.data());
      const int64_t dst = ((at.seq(b) * seq + pos) * nkv + h) * hd;
      for (int64_t d = 0; d < hd; ++d) {
        kc.store(dst + d, k_row[d]);
        vc.store(dst + d, v_row[d]);
      }
    }
  }
}

void load_q_heads(const TensorBuffer& q, int64_t b, int64_t j0, int64_t j1, int64_t hd, const HeadPrep* prep,
                  int64_t pos, float* out) {
  const int64_t width = q.shape[1];
  q.load_row(b * width + j0 * hd, (j1 - j0) * hd, out);
  if (!prep) return;
  std::vector<float> cs(static_cast<size_t>(hd)), row(static_cast<size_t>(hd));
  prep_angles(*prep, pos, cs);
  for (int64_t j = j0; j < j1; ++j) {
    float* head = out + (j - j0) * hd;
    std::copy(head, head + hd, row.begin());
    prep_head(row.data(), hd, *prep, cs, head);
    for (int64_t d = 0; d < hd; ++d) head[d] = round_bf16(head[d]);  // as the roped q is stored
  }
}

void attention_block(const TensorBuffer& q, const TensorBuffer& kc, const TensorBuffer& vc,
                     TensorBuffer& y, int64_t b0, int64_t b1, int64_t j0, int64_t j1,
                     const AttentionShape& a, const RowPositions& at, const HeadPrep* q_prep,
                     const CurrentKv* current) {
  const int64_t hd = a.head_dim, width = q.shape[1];
  std::vector<float> qrow(static_cast<size_t>(hd)), o(static_cast<size_t>(hd));
  std::vector<float> cur_k(static_cast<size_t>(hd)), cur_v(static_cast<size_t>(hd));
  for (int64_t b = b0; b < b1; ++b) {
    const int64_t pos = at.pos(b);
    if (pos < 0 || pos >= kc.shape[1])
      throw Error("attention: position " + std::to_string(pos) + " is past max_seq_len " +
                  std::to_string(kc.shape[1]));
    for (int64_t j = j0; j < j1; ++j) {
      const int64_t h = j / a.group;
      if (current && (j == j0 || j % a.group == 0)) {  // kv head h's row at pos, as the caches keep it
        appended_row(*current->k, *current->v, b, h, hd, pos, current->prep, cur_k.data(), cur_v.data());
        for (int64_t d = 0; d < hd; ++d) cur_k[d] = kc.rounded(cur_k[d]), cur_v[d] = vc.rounded(cur_v[d]);
      }
      load_q_heads(q, b, j, j + 1, hd, q_prep, pos, qrow.data());
      float m, l;
      attend(qrow.data(), kc, vc, at.seq(b), h, 0, pos + 1, hd, a.scale, o.data(), &m, &l, current ? pos : -1,
             cur_k.data(), cur_v.data());
      for (int64_t d = 0; d < hd; ++d) y.store(b * width + j * hd + d, o[d]);
    }
  }
}

void attention_partial_block(const TensorBuffer& q, const TensorBuffer& kc, const TensorBuffer& vc,
                             TensorBuffer& part, int64_t b0, int64_t b1, int64_t h0, int64_t h1,
                             const AttentionShape& a, const RowPositions& at, int64_t s0, int64_t s1,
                             int64_t split, const HeadPrep* q_prep) {
  const int64_t hd = a.head_dim;
  const int64_t nq = part.shape[1], splits = part.shape[2], rec = part.shape[3];
  std::vector<float> qrow(static_cast<size_t>(hd)), o(static_cast<size_t>(hd));
  for (int64_t b = b0; b < b1; ++b) {
    const int64_t pos = at.pos(b), t1 = std::min(s1, pos + 1);
    for (int64_t h = h0; h < h1; ++h)
      for (int64_t j = h * a.group; j < (h + 1) * a.group; ++j) {
        float m = kNegInf, l = 0;
        if (t1 > s0) {
          load_q_heads(q, b, j, j + 1, hd, q_prep, pos, qrow.data());
          attend(qrow.data(), kc, vc, at.seq(b), h, s0, t1, hd, a.scale, o.data(), &m, &l);
        } else {
          std::fill(o.begin(), o.end(), 0.0f);
        }
        const int64_t base = ((b * nq + j) * splits + split) * rec;
        for (int64_t d = 0; d < hd; ++d) part.store(base + d, o[d]);
        part.store(base + hd, m);
        part.store(base + hd + 1, l);
      }
  }
}

void attention_merge_block(const TensorBuffer& part, TensorBuffer& y, int64_t b0, int64_t b1,
                           int64_t j0, int64_t j1, int64_t head_dim) {
  const int64_t nq = part.shape[1], splits = part.shape[2], rec = part.shape[3];
  const int64_t width = y.shape[1], hd = head_dim;
  std::vector<float> num(static_cast<size_t>(hd));
  for (int64_t b = b0; b < b1; ++b)
    for (int64_t j = j0; j < j1; ++j) {
      const int64_t base = (b * nq + j) * splits * rec;
      float big = kNegInf;
      for (int64_t s = 0; s < splits; ++s)
        if (part.load(base + s * rec + hd + 1) > 0) big = std::max(big, part.load(base + s * rec + hd));
      std::fill(num.begin(), num.end(), 0.0f);
      float den = 0;
      for (int64_t s = 0; s < splits; ++s) {
        const float l = part.load(base + s * rec + hd + 1);
        if (!(l > 0)) continue;  // an empty split contributes nothing
        const float w = l * std::exp(part.load(base + s * rec + hd) - big);
        den += w;
        for (int64_t d = 0; d < hd; ++d) num[d] += w * part.load(base + s * rec + d);
      }
      for (int64_t d = 0; d < hd; ++d) y.store(b * width + j * hd + d, num[d] / den);
    }
}

void silu_mul_block(const TensorBuffer& g, const TensorBuffer& u, TensorBuffer& y, int64_t b0,
                    int64_t b1, int64_t c0, int64_t c1) {
  const int64_t width = y.shape[1];
  for (int64_t b = b0; b < b1; ++b)
    for (int64_t c = c0; c < c1; ++c) {
      y.store(b * width + c, silu_mul_value(g.load(b * width + c), u.load(b * width + c)));
    }
}

void all_reduce_block(const TensorBuffer& a, const std::vector<const TensorBuffer*>& partials, TensorBuffer& y,
                      int64_t b0, int64_t b1, int64_t c0, int64_t c1) {
  const int64_t width = y.shape[1];
  for (int64_t b = b0; b < b1; ++b)
    for (int64_t c = c0; c < c1; ++c) {
      float acc = a.load(b * width + c);
      for (const TensorBuffer* p : partials) acc += p->load(b * width + c);
      y.store(b * width + c, acc);
    }
}

void residual_add_block(const TensorBuffer& a, const TensorBuffer& b_, TensorBuffer& y,
                        int64_t b0, int64_t b1, int64_t c0, int64_t c1) {
  const int64_t width = y.shape[1];
  for (int64_t b = b0; b < b1; ++b)
    for (int64_t c = c0; c < c1; ++c)
      y.store(b * width + c, a.load(b * width + c) + b_.load(b * width + c));
}

bool argmax_row(const TensorBuffer& logits, int64_t b, int64_t v0, int64_t v1, float* value,
                int32_t* index) {
  const int64_t width = logits.shape[1];
  float best = kNegInf;
  int64_t idx = v0;
  bool finite = true;
  for (int64_t v = v0; v < v1; ++v) {
    const float x = logits.load(b * width + v);
    finite &= std::isfinite(x);
    if (x > best) {
      best = x;
      idx = v;
    }
  }
  *value = best;
  *index = static_cast<int32_t>(idx);
  return finite;
}

void argmax_partial_units(const TensorBuffer& logits, TensorBuffer& val, TensorBuffer& idx, int64_t b0, int64_t b1,
                          const std::vector<std::pair<int64_t, int64_t>>& ranges, int64_t slot,
                          const StepContext& ctx) {
  const int64_t parts = val.shape[1], width = logits.shape[1];
  for (int64_t b = b0; b < b1; ++b) {
    float best = kNegInf;
    int64_t at = 0;
    bool finite = true;
    for (const auto& [v0, v1] : ranges)
      for (int64_t v = v0; v < v1; ++v) {
        const float x = logits.load(b * width + v);
        finite &= std::isfinite(x);
        if (x > best || (x == best && v < at)) {
          best = x;
          at = v;
        }
      }
    val.store(b * parts + slot, best);
    idx.store_i32(b * parts + slot, static_cast<int32_t>(at));
    if (!finite && ctx.recorder) ctx.recorder->mark_non_finite(ctx.step, b);
  }
}

void argmax_partial_block(const TensorBuffer& logits, TensorBuffer& val, TensorBuffer& idx, int64_t b0,
                          int64_t b1, int64_t v0, int64_t v1, int64_t slot, const StepContext& ctx) {
  const int64_t parts = val.shape[1];
  for (int64_t b = b0; b < b1; ++b) {
    float v;
    int32_t i;
    if (!argmax_row(logits, b, v0, v1, &v, &i) && ctx.recorder) ctx.recorder->mark_non_finite(ctx.step, b);
    val.store(b * parts + slot, v);
    idx.store_i32(b * parts + slot, i);
  }
}

}  // namespace mpk
