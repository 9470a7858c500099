// SPDX-License-Identifier: BSD-3-Clause
// LayerNorm over the last dimension: y = (x - mean) * rstd * w + b. The forward keeps
// mean and rstd per row so the backward does not recompute them.
#pragma once
#include "mini5d/kernels/math.hpp"
#include "mini5d/kernels/views.hpp"

namespace mini5d::kernels {

template <class S>
void layernorm_forward(MatU<S> y, VecU<S> mean, VecU<S> rstd, CMatU<S> x, CVecU<S> w,
                       CVecU<S> b, S eps = S(1e-5)) {
  const int cols = int(x.extent(1));
  Kokkos::parallel_for(
      "mini5d::kernels::layernorm_forward", Range(0, x.extent(0)), KOKKOS_LAMBDA(const int r) {
        S m = 0;
        for (int c = 0; c < cols; ++c) m += x(r, c);
        m /= S(cols);
        S var = 0;
        for (int c = 0; c < cols; ++c) {
          const S dx = x(r, c) - m;
          var += dx * dx;
        }
        var /= S(cols);
        const S rs = S(1) / kmath::sqrt(var + eps);
        for (int c = 0; c < cols; ++c) y(r, c) = (x(r, c) - m) * rs * w(c) + b(c);
        mean(r) = m;
        rstd(r) = rs;
      });
}

// dx is overwritten, or added to when accumulate_dx (the residual stream sums
// gradients from both of its branches); dw and db accumulate.
template <class S>
void layernorm_backward(MatU<S> dx, VecU<S> dw, VecU<S> db, CMatU<S> dy, CMatU<S> x,
                        CVecU<S> w, CVecU<S> mean, CVecU<S> rstd, bool accumulate_dx) {
  const int rows = int(x.extent(0)), cols = int(x.extent(1));
  Kokkos::parallel_for(
      "mini5d::kernels::layernorm_backward_x", Range(0, rows), KOKKOS_LAMBDA(const int r) {
        const S m = mean(r), rs = rstd(r);
        S sum_g = 0, sum_gx = 0;  // means of dy*w and dy*w*xhat over the row
        for (int c = 0; c < cols; ++c) {
          const S g = dy(r, c) * w(c);
          sum_g += g;
          sum_gx += g * (x(r, c) - m) * rs;
        }
        sum_g /= S(cols);
        sum_gx /= S(cols);
        for (int c = 0; c < cols; ++c) {
          const S xhat = (x(r, c) - m) * rs;
          const S v = rs * (dy(r, c) * w(c) - sum_g - xhat * sum_gx);
          dx(r, c) = accumulate_dx ? dx(r, c) + v : v;
        }
      });
  // Parameter gradients: one thread per column, rows in order, so the sum is
  // deterministic on every backend (no atomics).
  Kokkos::parallel_for(
      "mini5d::kernels::layernorm_backward_w", Range(0, cols), KOKKOS_LAMBDA(const int c) {
        S gw = 0, gb = 0;
        for (int r = 0; r < rows; ++r) {
          gw += dy(r, c) * (x(r, c) - mean(r)) * rstd(r);
          gb += dy(r, c);
        }
        dw(c) += gw;
        db(c) += gb;
      });
}

}  // namespace mini5d::kernels
