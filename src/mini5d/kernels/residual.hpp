// SPDX-License-Identifier: BSD-3-Clause
// Residual add y = a + b, and the gradient-side accumulate a += b.
#pragma once
#include "mini5d/kernels/views.hpp"

namespace mini5d::kernels {

template <class S>
void add(MatU<S> y, CMatU<S> a, CMatU<S> b) {
  const int cols = int(y.extent(1));
  Kokkos::parallel_for(
      "mini5d::kernels::residual_add", Range(0, y.extent(0)), KOKKOS_LAMBDA(const int r) {
        for (int c = 0; c < cols; ++c) y(r, c) = a(r, c) + b(r, c);
      });
}

template <class S>
void accumulate(MatU<S> y, CMatU<S> b) {
  const int cols = int(y.extent(1));
  Kokkos::parallel_for(
      "mini5d::kernels::residual_accumulate", Range(0, y.extent(0)), KOKKOS_LAMBDA(const int r) {
        for (int c = 0; c < cols; ++c) y(r, c) += b(r, c);
      });
}

}  // namespace mini5d::kernels
