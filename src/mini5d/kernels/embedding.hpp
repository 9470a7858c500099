// SPDX-License-Identifier: BSD-3-Clause
// Token + learned position embedding: x[b*T + t] = wte[tok[b*T + t]] + wpe[t].
#pragma once
#include "mini5d/kernels/views.hpp"

namespace mini5d::kernels {

template <class S>
void embedding_forward(MatU<S> x, CTokU tokens, CMatU<S> wte, CMatU<S> wpe, int seq) {
  const int cols = int(x.extent(1));
  Kokkos::parallel_for(
      "mini5d::kernels::embedding_forward", Range(0, x.extent(0)), KOKKOS_LAMBDA(const int r) {
        const int tok = tokens(r), t = r % seq;
        for (int c = 0; c < cols; ++c) x(r, c) = wte(tok, c) + wpe(t, c);
      });
}

// dwte[tok] += dx, dwpe[t] += dx. One thread per embedding column walks the tokens in
// order: race-free without atomics and bit-reproducible on every backend.
template <class S>
void embedding_backward(MatU<S> dwte, MatU<S> dwpe, CMatU<S> dx, CTokU tokens, int seq) {
  const int rows = int(dx.extent(0));
  Kokkos::parallel_for(
      "mini5d::kernels::embedding_backward", Range(0, dx.extent(1)), KOKKOS_LAMBDA(const int c) {
        for (int r = 0; r < rows; ++r) {
          dwte(tokens(r), c) += dx(r, c);
          dwpe(r % seq, c) += dx(r, c);
        }
      });
}

}  // namespace mini5d::kernels
