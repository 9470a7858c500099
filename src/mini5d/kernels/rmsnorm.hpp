// SPDX-License-Identifier: BSD-3-Clause
// RMSNorm over the last dimension (model.norm=rmsnorm): y = x * rstd * w with
// rstd = 1 / sqrt(mean(x^2) + eps); no mean subtraction, no bias. The forward keeps
// rstd per row (one statistic, where LayerNorm keeps two). The statistics are summed in
// acc_t<S>: fp32 in training, also when x is stored in bf16 (never a narrower type), fp64
// in the gradient checks; dw is in acc_t<S> too (the fp32 main gradient under bf16).
//
// Same structure as layernorm.hpp, for the same reasons: a team per row in the forward;
// the backward sweeps blocks of kLnRows rows, each team writing dx and its block's
// partial sums of dw, and a second kernel adds the partials per column in block order
// (the same result on every backend and thread count, no atomics).
#pragma once
#include "mini5d/kernels/team_reduce.hpp"
#include "mini5d/kernels/layernorm.hpp"

namespace mini5d::kernels {

template <class S>
void rmsnorm_forward(MatU<S> y, VecU<acc_t<S>> rstd, CMatU<S> x, CVecU<S> w, acc_t<S> eps = acc_t<S>(1e-5)) {
  using A = acc_t<S>;
  const int rows = int(x.extent(0)), cols = int(x.extent(1));
  prof::Scope ps(prof::Family::layernorm, 4.0 * rows * cols, double(sizeof(S)) * 2.0 * rows * cols);
  Kokkos::parallel_for(
      "mini5d::kernels::rmsnorm_forward", teams(rows), KOKKOS_LAMBDA(const TeamMember& t) {
        const int r = t.league_rank();
        const A ms = team_sum<A>(t, cols, [&](const int c) { return ld(x(r, c)) * ld(x(r, c)); }) / A(cols);
        const A rs = A(1) / kmath::sqrt(ms + eps);
        team_for(t, 0, cols, [&](const int c) { y(r, c) = st<S>(ld(x(r, c)) * rs * ld(w(c))); });
        Kokkos::single(Kokkos::PerTeam(t), [&]() { rstd(r) = rs; });
      });
}

// With xhat = x * rstd and g = dy * w:  dx = rstd * (g - xhat * mean(g * xhat)),
// dw += sum over rows of dy * xhat. dx is overwritten, or added to when accumulate_dx
// (the residual stream sums both branches' gradients); dw accumulates.
template <class S>
void rmsnorm_backward(MatU<S> dx, VecU<acc_t<S>> dw, CMatU<S> dy, CMatU<S> x, CVecU<S> w,
                      CVecU<acc_t<S>> rstd, bool accumulate_dx) {
  using A = acc_t<S>;
  const int rows = int(x.extent(0)), cols = int(x.extent(1));
  const int blocks = (rows + kLnRows - 1) / kLnRows;
  prof::Scope ps(prof::Family::layernorm, 9.0 * rows * cols,
                 double(sizeof(S)) * (rows * cols * (accumulate_dx ? 4.0 : 3.0) + 2.0 * blocks * cols));
  const VecU<A> part = scratch<A>(std::int64_t(blocks) * cols);  // [blocks][dw partials]
  Kokkos::parallel_for(
      "mini5d::kernels::rmsnorm_backward", teams(blocks), KOKKOS_LAMBDA(const TeamMember& t) {
        const int r0 = t.league_rank() * kLnRows;
        const int r1 = r0 + kLnRows < rows ? r0 + kLnRows : rows;
        A* pw = part.data() + std::int64_t(t.league_rank()) * cols;
        // A column's partial belongs to the thread team_for (TeamThreadRange) gives it in every loop.
        team_for(t, 0, cols, [&](const int c) { pw[c] = A(0); });
        for (int r = r0; r < r1; ++r) {
          const A rs = rstd(r);
          const A mean_gx =
              team_sum<A>(t, cols, [&](const int c) { return ld(dy(r, c)) * ld(w(c)) * ld(x(r, c)) * rs; }) / A(cols);
          team_for(t, 0, cols, [&](const int c) {
            const A xhat = ld(x(r, c)) * rs;
            const A v = rs * (ld(dy(r, c)) * ld(w(c)) - xhat * mean_gx);
            dx(r, c) = st<S>(accumulate_dx ? ld(dx(r, c)) + v : v);
            pw[c] += ld(dy(r, c)) * xhat;
          });
        }
      });
  Kokkos::parallel_for(
      "mini5d::kernels::rmsnorm_backward_params", Range(0, cols), KOKKOS_LAMBDA(const int c) {
        A gw = 0;
        for (int k = 0; k < blocks; ++k) gw += part(std::int64_t(k) * cols + c);
        dw(c) += gw;
      });
}

}  // namespace mini5d::kernels
