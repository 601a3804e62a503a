// RoPE frequencies and angles (ir/rope.h).
#include "ir/rope.h"

#include <cmath>
#include <numbers>
#include <string>

#include "ir/error.h"

namespace mpk {

std::vector<float> rope_inverse_frequencies(const Attrs& a) {
  const int64_t hd = attr_int(a, "head_dim");
  const double theta = attr_float(a, "theta");
  const std::string type = attr_str_or(a, "rope_type", "default");
  if (type != "default" && type != "llama3") throw Error("rope: unsupported rope_type \"" + type + "\"");
  std::vector<float> inv(static_cast<size_t>(hd / 2));
  for (int64_t i = 0; i < hd / 2; ++i) {
    double f = std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(hd));
    if (type == "llama3") {
      const double factor = attr_float(a, "factor");
      const double low = attr_float(a, "low_freq_factor"), high = attr_float(a, "high_freq_factor");
      const double orig = attr_float(a, "original_max_position_embeddings");
      const double lo_wavelen = orig / low, hi_wavelen = orig / high;
      const double wavelen = 2.0 * std::numbers::pi / f;
      if (wavelen > lo_wavelen) {
        f = f / factor;
      } else if (wavelen >= hi_wavelen) {
        const double s = (orig / wavelen - low) / (high - low);
        f = (1.0 - s) * f / factor + s * f;
      }
    }
    inv[static_cast<size_t>(i)] = static_cast<float>(f);
  }
  return inv;
}

void rope_cos_sin_at(const std::vector<float>& inv, int64_t pos, float* cs) {
  for (size_t i = 0; i < inv.size(); ++i) {
    const float angle = static_cast<float>(pos) * inv[i];
    cs[2 * i] = static_cast<float>(std::cos(static_cast<double>(angle)));
    cs[2 * i + 1] = static_cast<float>(std::sin(static_cast<double>(angle)));
  }
}

std::vector<float> rope_cos_sin_table(const std::vector<float>& inv, int64_t max_seq_len) {
  std::vector<float> t(static_cast<size_t>(max_seq_len) * inv.size() * 2);
  for (int64_t pos = 0; pos < max_seq_len; ++pos) rope_cos_sin_at(inv, pos, t.data() + pos * inv.size() * 2);
  return t;
}

}  // namespace mpk
