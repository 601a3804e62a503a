// One-dimensional minimization for the calibration fits: a grid, then a golden-section
// search between the best grid point's neighbours.
#pragma once

#include <algorithm>
#include <cmath>

namespace mpk {

// Minimizes f over [lo, hi]: grid + 1 evenly spaced points, then `iters` golden-section
// steps around the best of them. Returns the best x seen.
template <class F>
double minimize_1d(F f, double lo, double hi, int grid, int iters) {
  double best_x = lo, best_v = f(lo);
  for (int j = 1; j <= grid; ++j) {
    const double x = lo + (hi - lo) * j / grid;
    const double v = f(x);
    if (v < best_v) best_v = v, best_x = x;
  }
  const double step = (hi - lo) / grid;
  double a = std::max(lo, best_x - step), b = std::min(hi, best_x + step);
  const double phi = 0.5 * (std::sqrt(5.0) - 1);
  double c = b - phi * (b - a), d = a + phi * (b - a);
  double fc = f(c), fd = f(d);
  for (int it = 0; it < iters; ++it) {
    if (fc <= fd) {
      b = d, d = c, fd = fc;
      c = b - phi * (b - a), fc = f(c);
    } else {
      a = c, c = d, fc = fd;
      d = a + phi * (b - a), fd = f(d);
    }
  }
  if (fc < best_v) best_v = fc, best_x = c;
  if (fd < best_v) best_v = fd, best_x = d;
  return best_x;
}

}  // namespace mpk
