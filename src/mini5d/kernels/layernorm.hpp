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
//
// S is the storage type of x, y, dx, dy, w and b (float, double, or bf16); the
// statistics (mean, rstd), every sum, and the parameter gradients dw, db are in
// acc_t<S> (fp32 for bf16: its statistics and main gradients). For float and double
// ld/st are the identity and the code is what it was before bf16 existed.
#pragma once
#include "mini5d/kernels/bf16.hpp"
#include "mini5d/kernels/math.hpp"
#include "mini5d/kernels/profile.hpp"
#include "mini5d/kernels/scratch.hpp"
#include "mini5d/kernels/team_reduce.hpp"
#include "mini5d/kernels/views.hpp"

namespace mini5d::kernels {

constexpr int kLnRows = 32;  // rows per block of the backward's partial sums

template <class S>
void layernorm_forward(MatU<S> y, VecU<acc_t<S>> mean, VecU<acc_t<S>> rstd, CMatU<S> x, CVecU<S> w,
                       CVecU<S> b, acc_t<S> eps = acc_t<S>(1e-5)) {
  using A = acc_t<S>;
  const int rows = int(x.extent(0)), cols = int(x.extent(1));
  prof::Scope ps(prof::Family::layernorm, 8.0 * rows * cols, double(sizeof(S)) * 2.0 * rows * cols);
  const bool has_b = b.extent(0) > 0;
  Kokkos::parallel_for(
      "mini5d::kernels::layernorm_forward", teams(rows), KOKKOS_LAMBDA(const TeamMember& t) {
        const int r = t.league_rank();
        const A m = team_sum<A>(t, cols, [&](const int c) { return ld(x(r, c)); }) / A(cols);
        const A var = team_sum<A>(t, cols, [&](const int c) {
                        const A d = ld(x(r, c)) - m;
                        return d * d;
                      }) /
                      A(cols);
        const A rs = A(1) / kmath::sqrt(var + eps);
        team_for(t, 0, cols, [&](const int c) {
          y(r, c) = st<S>((ld(x(r, c)) - m) * rs * ld(w(c)) + (has_b ? ld(b(c)) : A(0)));
        });
        Kokkos::single(Kokkos::PerTeam(t), [&]() {
          mean(r) = m;
          rstd(r) = rs;
        });
      });
}

// dx is overwritten, or added to when accumulate_dx (the residual stream sums
// gradients from both of its branches); dw and db accumulate (an empty db is skipped).
template <class S>
void layernorm_backward(MatU<S> dx, VecU<acc_t<S>> dw, VecU<acc_t<S>> db, CMatU<S> dy, CMatU<S> x,
                        CVecU<S> w, CVecU<acc_t<S>> mean, CVecU<acc_t<S>> rstd, bool accumulate_dx) {
  using A = acc_t<S>;
  const int rows = int(x.extent(0)), cols = int(x.extent(1));
  const int blocks = (rows + kLnRows - 1) / kLnRows;
  prof::Scope ps(prof::Family::layernorm, 14.0 * rows * cols,
                 double(sizeof(S)) * (rows * cols * (accumulate_dx ? 4.0 : 3.0) + 4.0 * blocks * cols));
  // part: [blocks][dw | db] partial sums, cols each.
  const VecU<A> part = scratch<A>(std::int64_t(blocks) * 2 * cols);
  const bool has_db = db.extent(0) > 0;
  Kokkos::parallel_for(
      "mini5d::kernels::layernorm_backward", teams(blocks), KOKKOS_LAMBDA(const TeamMember& t) {
        const int r0 = t.league_rank() * kLnRows;
        const int r1 = r0 + kLnRows < rows ? r0 + kLnRows : rows;
        A* pw = part.data() + std::int64_t(t.league_rank()) * 2 * cols;
        A* pb = pw + cols;
        // Each column's partials belong to the thread team_for (TeamThreadRange) gives that column
        // in every loop below, so no barrier is needed between them.
        team_for(t, 0, cols, [&](const int c) {
          pw[c] = A(0);
          pb[c] = A(0);
        });
        for (int r = r0; r < r1; ++r) {
          const A m = mean(r), rs = rstd(r);
          // Means of dy*w and dy*w*xhat over the row.
          const A sum_g = team_sum<A>(t, cols, [&](const int c) { return ld(dy(r, c)) * ld(w(c)); }) / A(cols);
          const A sum_gx = team_sum<A>(t, cols, [&](const int c) {
                             return ld(dy(r, c)) * ld(w(c)) * ((ld(x(r, c)) - m) * rs);
                           }) /
                           A(cols);
          team_for(t, 0, cols, [&](const int c) {
            const A g = ld(dy(r, c));
            const A xhat = (ld(x(r, c)) - m) * rs;
            const A v = rs * (g * ld(w(c)) - sum_g - xhat * sum_gx);
            dx(r, c) = st<S>(accumulate_dx ? ld(dx(r, c)) + v : v);
            pw[c] += g * xhat;
            pb[c] += g;
          });
        }
      });
  // Blocks in order, one thread per column (consecutive threads, consecutive columns).
  Kokkos::parallel_for(
      "mini5d::kernels::layernorm_backward_params", Range(0, cols), KOKKOS_LAMBDA(const int c) {
        A gw = 0, gb = 0;
        for (int k = 0; k < blocks; ++k) {
          gw += part(std::int64_t(k) * 2 * cols + c);
          gb += part(std::int64_t(k) * 2 * cols + cols + c);
        }
        dw(c) += gw;
        if (has_db) db(c) += gb;
      });
}

}  // namespace mini5d::kernels
