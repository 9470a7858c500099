// SPDX-License-Identifier: BSD-3-Clause
// LayerNorm over the last dimension: y = (x - mean) * rstd * w + b. The forward keeps
// mean and rstd per row so the backward does not recompute them. An empty b (and db in
// the backward: model.bias=false) is a LayerNorm without bias.
//
// Both directions are team kernels: the forward takes a team per row (row sums are team
// reductions, consecutive threads on consecutive columns). The backward is one sweep
// over blocks of kLnRows rows: a team computes dx row by row and, in the same pass,
// its block's partial sums of dw and db (one per column, each owned by one thread);
// a small second kernel adds the blocks' partials per column in block order. The block
// size is fixed, so the sums do not depend on the thread count: the result is
// reproducible on every backend, without atomics.
#pragma once
#include "mini5d/kernels/math.hpp"
#include "mini5d/kernels/profile.hpp"
#include "mini5d/kernels/scratch.hpp"
#include "mini5d/kernels/team_reduce.hpp"
#include "mini5d/kernels/views.hpp"

namespace mini5d::kernels {

constexpr int kLnRows = 32;  // rows per block of the backward's partial sums

template <class S>
void layernorm_forward(MatU<S> y, VecU<S> mean, VecU<S> rstd, CMatU<S> x, CVecU<S> w,
                       CVecU<S> b, S eps = S(1e-5)) {
  const int rows = int(x.extent(0)), cols = int(x.extent(1));
  prof::Scope ps(prof::Family::layernorm, 8.0 * rows * cols, double(sizeof(S)) * 2.0 * rows * cols);
  const bool has_b = b.extent(0) > 0;
  Kokkos::parallel_for(
      "mini5d::kernels::layernorm_forward", teams(rows), KOKKOS_LAMBDA(const TeamMember& t) {
        const int r = t.league_rank();
        const S m = team_sum<S>(t, cols, [&](const int c) { return x(r, c); }) / S(cols);
        const S var = team_sum<S>(t, cols, [&](const int c) {
                        const S d = x(r, c) - m;
                        return d * d;
                      }) /
                      S(cols);
        const S rs = S(1) / kmath::sqrt(var + eps);
        Kokkos::parallel_for(Kokkos::TeamThreadRange(t, cols),
                             [&](const int c) { y(r, c) = (x(r, c) - m) * rs * w(c) + (has_b ? b(c) : S(0)); });
        Kokkos::single(Kokkos::PerTeam(t), [&]() {
          mean(r) = m;
          rstd(r) = rs;
        });
      });
}

// dx is overwritten, or added to when accumulate_dx (the residual stream sums
// gradients from both of its branches); dw and db accumulate (an empty db is skipped).
template <class S>
void layernorm_backward(MatU<S> dx, VecU<S> dw, VecU<S> db, CMatU<S> dy, CMatU<S> x,
                        CVecU<S> w, CVecU<S> mean, CVecU<S> rstd, bool accumulate_dx) {
  const int rows = int(x.extent(0)), cols = int(x.extent(1));
  const int blocks = (rows + kLnRows - 1) / kLnRows;
  prof::Scope ps(prof::Family::layernorm, 14.0 * rows * cols,
                 double(sizeof(S)) * (rows * cols * (accumulate_dx ? 4.0 : 3.0) + 4.0 * blocks * cols));
  // part: [blocks][dw | db] partial sums, cols each.
  const VecU<S> part = scratch<S>(std::int64_t(blocks) * 2 * cols);
  const bool has_db = db.extent(0) > 0;
  Kokkos::parallel_for(
      "mini5d::kernels::layernorm_backward", teams(blocks), KOKKOS_LAMBDA(const TeamMember& t) {
        const int r0 = t.league_rank() * kLnRows;
        const int r1 = r0 + kLnRows < rows ? r0 + kLnRows : rows;
        S* pw = part.data() + std::int64_t(t.league_rank()) * 2 * cols;
        S* pb = pw + cols;
        // Each column's partials belong to the thread TeamThreadRange gives that column
        // in every loop below, so no barrier is needed between them.
        Kokkos::parallel_for(Kokkos::TeamThreadRange(t, cols), [&](const int c) {
          pw[c] = S(0);
          pb[c] = S(0);
        });
        for (int r = r0; r < r1; ++r) {
          const S m = mean(r), rs = rstd(r);
          // Means of dy*w and dy*w*xhat over the row.
          const S sum_g = team_sum<S>(t, cols, [&](const int c) { return dy(r, c) * w(c); }) / S(cols);
          const S sum_gx =
              team_sum<S>(t, cols, [&](const int c) { return dy(r, c) * w(c) * ((x(r, c) - m) * rs); }) / S(cols);
          Kokkos::parallel_for(Kokkos::TeamThreadRange(t, cols), [&](const int c) {
            const S g = dy(r, c);
            const S xhat = (x(r, c) - m) * rs;
            const S v = rs * (g * w(c) - sum_g - xhat * sum_gx);
            dx(r, c) = accumulate_dx ? dx(r, c) + v : v;
            pw[c] += g * xhat;
            pb[c] += g;
          });
        }
      });
  // Blocks in order, one thread per column (consecutive threads, consecutive columns).
  Kokkos::parallel_for(
      "mini5d::kernels::layernorm_backward_params", Range(0, cols), KOKKOS_LAMBDA(const int c) {
        S gw = 0, gb = 0;
        for (int k = 0; k < blocks; ++k) {
          gw += part(std::int64_t(k) * 2 * cols + c);
          gb += part(std::int64_t(k) * 2 * cols + cols + c);
        }
        dw(c) += gw;
        if (has_db) db(c) += gb;
      });
}

}  // namespace mini5d::kernels
