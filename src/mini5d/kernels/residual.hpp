// SPDX-License-Identifier: BSD-3-Clause
// Residual add y = a + b, and the gradient-side accumulate a += b. Both are elementwise
// over the flat, contiguous data: consecutive indices are consecutive elements (coalesced
// on a GPU, one vectorised loop on a CPU). S is the storage type (float, double or bf16):
// the sum is formed in acc_t<S> and rounded once on store.
#pragma once
#include "mini5d/kernels/bf16.hpp"
#include "mini5d/kernels/profile.hpp"
#include "mini5d/kernels/views.hpp"

namespace mini5d::kernels {

template <class S>
void add(MatU<S> y, CMatU<S> a, CMatU<S> b) {
  const VecU<S> yf(y.data(), y.size());
  const CVecU<S> af(a.data(), a.size()), bf(b.data(), b.size());
  prof::Scope ps(prof::Family::residual, double(y.size()), 3.0 * double(sizeof(S)) * double(y.size()));
  Kokkos::parallel_for(
      "mini5d::kernels::residual_add", Range(0, yf.extent(0)),
      KOKKOS_LAMBDA(const std::int64_t i) { yf(i) = st<S>(ld(af(i)) + ld(bf(i))); });
}

template <class S>
void accumulate(MatU<S> y, CMatU<S> b) {
  const VecU<S> yf(y.data(), y.size());
  const CVecU<S> bf(b.data(), b.size());
  prof::Scope ps(prof::Family::residual, double(y.size()), 3.0 * double(sizeof(S)) * double(y.size()));
  Kokkos::parallel_for(
      "mini5d::kernels::residual_accumulate", Range(0, yf.extent(0)),
      KOKKOS_LAMBDA(const std::int64_t i) { yf(i) = st<S>(ld(yf(i)) + ld(bf(i))); });
}

}  // namespace mini5d::kernels
