// SPDX-License-Identifier: BSD-3-Clause
// dst += src element by element, for partial sums that arrive in a buffer of their own:
// ZeRO's reduce-scattered gradient parts into the rank's shard, and ring attention's
// dK/dV coming home from the ring. Profiled with the residual adds (same shape of work).
#pragma once
#include <cstdint>

#include "mini5d/kernels/profile.hpp"
#include "mini5d/kernels/views.hpp"

namespace mini5d::kernels {

template <class S>
void add_into(VecU<S> dst, CVecU<S> src) {
  const std::int64_t n = std::int64_t(dst.extent(0));
  prof::Scope ps(prof::Family::residual, double(n), 3.0 * double(sizeof(S)) * double(n));
  Kokkos::parallel_for(
      "mini5d::kernels::add_into", Range(0, n), KOKKOS_LAMBDA(const std::int64_t i) { dst(i) += src(i); });
}

}  // namespace mini5d::kernels
