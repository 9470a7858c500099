// SPDX-License-Identifier: BSD-3-Clause
// SwiGLU, the gated MLP activation of model.mlp=swiglu: a = silu(gate) * up with
// silu(g) = g * sigmoid(g). The gate and up projections run as one GEMM whose output
// h [N, 2W] holds the gate in columns [0, W) and up in [W, 2W) (a tensor rank's W = F/t
// columns of each: params/param_layout.cpp stores its gate rows, then its up rows), so the
// kernel pairs column c with column W + c. Element-wise on rows: a team per row, threads
// over consecutive columns. S is the storage type (float, double or bf16): values are
// computed in acc_t<S> and rounded once on store.
#pragma once
#include "mini5d/kernels/team_reduce.hpp"
#include "mini5d/kernels/bf16.hpp"
#include "mini5d/kernels/math.hpp"
#include "mini5d/kernels/profile.hpp"
#include "mini5d/kernels/views.hpp"

namespace mini5d::kernels {

template <class S>
KOKKOS_INLINE_FUNCTION S sigmoid(S g) {
  return S(1) / (S(1) + kmath::exp_fast(-g));  // exp -> inf gives 0, exp -> 0 gives 1
}

// a [N, W] = silu(h[:, :W]) * h[:, W:].
template <class S>
void swiglu_forward(MatU<S> a, CMatU<S> h) {
  const int rows = int(a.extent(0)), W = int(a.extent(1));
  // Profiled with GELU: the kernel table's "gelu" row is the MLP's activation.
  prof::Scope ps(prof::Family::gelu, 6.0 * rows * W, 3.0 * double(sizeof(S)) * rows * W);
  Kokkos::parallel_for(
      "mini5d::kernels::swiglu_forward", teams(rows), KOKKOS_LAMBDA(const TeamMember& t) {
        const int r = t.league_rank();
        team_for(t, 0, W, [&](const int c) {
          const auto g = ld(h(r, c));
          a(r, c) = st<S>(g * sigmoid(g) * ld(h(r, W + c)));
        });
      });
}

// dh [N, 2W] (overwritten) from da = dL/da:  d up = da * silu(g),
// d gate = da * up * silu'(g), silu'(g) = s (1 + g (1 - s)) with s = sigmoid(g).
template <class S>
void swiglu_backward(MatU<S> dh, CMatU<S> da, CMatU<S> h) {
  const int rows = int(da.extent(0)), W = int(da.extent(1));
  prof::Scope ps(prof::Family::gelu, 10.0 * rows * W, 5.0 * double(sizeof(S)) * rows * W);
  Kokkos::parallel_for(
      "mini5d::kernels::swiglu_backward", teams(rows), KOKKOS_LAMBDA(const TeamMember& t) {
        const int r = t.league_rank();
        team_for(t, 0, W, [&](const int c) {
          using A = acc_t<S>;
          const A g = ld(h(r, c)), u = ld(h(r, W + c)), d = ld(da(r, c));
          const A s = sigmoid(g);
          dh(r, W + c) = st<S>(d * g * s);
          dh(r, c) = st<S>(d * u * s * (A(1) + g * (A(1) - s)));
        });
      });
}

}  // namespace mini5d::kernels
