// Rotate-half RoPE's numbers, in one place for every backend: the inverse frequencies an
// operator's attrs name (docs/ir.md, "default" and "llama3" scaling) and the (cos, sin) of
// each frequency at a position. The CPU executor computes them per step and codegen
// uploads them as a table; bit-identical tokens across backends rest on both using these.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/attrs.h"

namespace mpk {

// inv[i] for i < head_dim / 2: theta^(-2i / head_dim) (llama3: scaled by wavelength),
// computed in double and rounded to f32. Throws mpk::Error for another rope_type.
std::vector<float> rope_inverse_frequencies(const Attrs& rope_attrs);

// cs[2i], cs[2i + 1] = cos, sin of the f32 angle pos * inv[i], taken in double and
// rounded to f32. `cs` holds 2 * inv.size() floats.
void rope_cos_sin_at(const std::vector<float>& inv, int64_t pos, float* cs);

// The table of rope_cos_sin_at for pos < max_seq_len: [pos][i][cos, sin].
std::vector<float> rope_cos_sin_table(const std::vector<float>& inv, int64_t max_seq_len);

}  // namespace mpk
