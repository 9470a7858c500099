// SPDX-License-Identifier: BSD-3-Clause
// GELU, tanh approximation (GPT-2's choice): 0.5 x (1 + tanh(k (x + 0.044715 x^3))),
// alone and fused with what runs next to it in the MLP: the fc bias add before the
// forward, and the fc bias gradient (column sums of the GELU backward's output) after
// the backward, which then reads its output once instead of twice.
//
// S is the storage type (float, double or bf16); every value is computed in acc_t<S>
// and rounded once on store, and the bias gradient db is in acc_t<S> (fp32 main gradient).
#pragma once
#include "mini5d/kernels/team_reduce.hpp"
#include "mini5d/kernels/bf16.hpp"
#include "mini5d/kernels/math.hpp"
#include "mini5d/kernels/profile.hpp"
#include "mini5d/kernels/scratch.hpp"
#include "mini5d/kernels/views.hpp"

namespace mini5d::kernels {

constexpr int kGeluRows = 32;  // rows per block of the bias gradient's partial sums

// tanh through one exp: libm's tanhf costs ~4x an expf, and GELU evaluates it on every
// MLP activation twice per step. Saturates correctly: exp -> inf gives 1, exp -> 0 gives
// -1. Near 0 the cancellation costs a few ulps of absolute error, far below the fp32
// noise of the surrounding matrix products (the fp64 gradient checks confirm).
template <class S>
KOKKOS_INLINE_FUNCTION S fast_tanh(S u) {
  return S(1) - S(2) / (kmath::exp_fast(S(2) * u) + S(1));
}

template <class S>
KOKKOS_INLINE_FUNCTION S gelu_value(S v) {
  const S k = S(0.7978845608028654);  // sqrt(2/pi)
  return S(0.5) * v * (S(1) + fast_tanh(k * (v + S(0.044715) * v * v * v)));
}

// d gelu(v) / dv
template <class S>
KOKKOS_INLINE_FUNCTION S gelu_slope(S v) {
  const S k = S(0.7978845608028654);
  const S th = fast_tanh(k * (v + S(0.044715) * v * v * v));
  const S dinner = k * (S(1) + S(3 * 0.044715) * v * v);
  return S(0.5) * (S(1) + th) + S(0.5) * v * (S(1) - th * th) * dinner;
}

// Elementwise over the flat, contiguous data (LayoutRight): one index per element maps
// to a thread on GPUs and lets the compiler vectorise the loop on CPUs.
template <class S>
void gelu_forward(MatU<S> y, CMatU<S> x) {
  const VecU<S> yf(y.data(), y.size());
  const CVecU<S> xf(x.data(), x.size());
  prof::Scope ps(prof::Family::gelu, 20.0 * double(x.size()), 2.0 * double(sizeof(S)) * double(x.size()));
  Kokkos::parallel_for(
      "mini5d::kernels::gelu_forward", Range(0, xf.extent(0)),
      KOKKOS_LAMBDA(const std::int64_t i) { yf(i) = st<S>(gelu_value(ld(xf(i)))); });
}

// h[N, F] += b[F] (h keeps the pre-activation for the backward), then y = gelu(h),
// evaluated on the stored h (rounded to S) so that the backward sees the same value.
// An empty b adds nothing.
template <class S>
void bias_gelu_forward(MatU<S> y, MatU<S> h, CVecU<S> b) {
  if (b.extent(0) == 0) return gelu_forward<S>(y, h);
  const int rows = int(h.extent(0)), cols = int(h.extent(1));
  prof::Scope ps(prof::Family::gelu, 21.0 * rows * cols, 3.0 * double(sizeof(S)) * rows * cols);
  Kokkos::parallel_for(
      "mini5d::kernels::bias_gelu_forward", teams(rows), KOKKOS_LAMBDA(const TeamMember& t) {
        const int r = t.league_rank();
        team_for(t, 0, cols, [&](const int c) {
          const S v = st<S>(ld(h(r, c)) + ld(b(c)));
          h(r, c) = v;
          y(r, c) = st<S>(gelu_value(ld(v)));
        });
      });
}

// dx = dy * gelu'(x) (overwritten; dx may alias dy).
template <class S>
void gelu_backward(MatU<S> dx, CMatU<S> dy, CMatU<S> x) {
  const VecU<S> dxf(dx.data(), dx.size());
  const CVecU<S> dyf(dy.data(), dy.size()), xf(x.data(), x.size());
  prof::Scope ps(prof::Family::gelu, 28.0 * double(x.size()), 3.0 * double(sizeof(S)) * double(x.size()));
  Kokkos::parallel_for(
      "mini5d::kernels::gelu_backward", Range(0, xf.extent(0)),
      KOKKOS_LAMBDA(const std::int64_t i) { dxf(i) = st<S>(ld(dyf(i)) * gelu_slope(ld(xf(i)))); });
}

// dx = dy * gelu'(x) and db += column sums of dx, in one sweep: a team per block of
// kGeluRows rows keeps its block's column sums, and a second small kernel adds the
// blocks' sums in block order (reproducible, no atomics). An empty db is gelu_backward.
template <class S>
void gelu_backward_bias(MatU<S> dx, VecU<acc_t<S>> db, CMatU<S> dy, CMatU<S> x) {
  using A = acc_t<S>;
  if (db.extent(0) == 0) return gelu_backward<S>(dx, dy, x);
  const int rows = int(x.extent(0)), cols = int(x.extent(1));
  const int blocks = (rows + kGeluRows - 1) / kGeluRows;
  prof::Scope ps(prof::Family::gelu, 29.0 * rows * cols,
                 double(sizeof(S)) * (3.0 * rows * cols + 2.0 * blocks * cols));
  const VecU<A> part = scratch<A>(std::int64_t(blocks) * cols);
  Kokkos::parallel_for(
      "mini5d::kernels::gelu_backward_bias", teams(blocks), KOKKOS_LAMBDA(const TeamMember& t) {
        const int r0 = t.league_rank() * kGeluRows;
        const int r1 = r0 + kGeluRows < rows ? r0 + kGeluRows : rows;
        A* pb = part.data() + std::int64_t(t.league_rank()) * cols;
        // A column's partial belongs to the one thread that owns the column in each loop.
        team_for(t, 0, cols, [&](const int c) { pb[c] = A(0); });
        for (int r = r0; r < r1; ++r)
          team_for(t, 0, cols, [&](const int c) {
            const A g = ld(dy(r, c)) * gelu_slope(ld(x(r, c)));
            dx(r, c) = st<S>(g);
            pb[c] += g;
          });
      });
  Kokkos::parallel_for(
      "mini5d::kernels::gelu_backward_bias_sum", Range(0, cols), KOKKOS_LAMBDA(const int c) {
        A s = 0;
        for (int k = 0; k < blocks; ++k) s += part(std::int64_t(k) * cols + c);
        db(c) += s;
      });
}

}  // namespace mini5d::kernels
