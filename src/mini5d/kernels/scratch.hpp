// SPDX-License-Identifier: BSD-3-Clause
// A grow-only device scratch buffer per scalar type, for the per-block partial sums of
// the fused column reductions (LayerNorm backward, bias gradient of the GELU backward):
// allocated once at its largest size instead of on every call, and released by a
// Kokkos finalize hook (a View must not outlive Kokkos). It is a few hundred kB
// (blocks x 2 x width), bookkeeping rather than model state, so it is not in the
// memory ledger.
#pragma once
#include <cstdint>

#include "mini5d/kernels/views.hpp"

namespace mini5d::kernels {

template <class S>
VecU<S> scratch(std::int64_t n) {
  static Vec<S>* buf = nullptr;
  if (!buf) {
    buf = new Vec<S>();
    Kokkos::push_finalize_hook([] {
      delete buf;
      buf = nullptr;
    });
  }
  if (std::int64_t(buf->extent(0)) < n)
    *buf = Vec<S>(Kokkos::ViewAllocateWithoutInitializing("mini5d::kernels::scratch"), std::size_t(n));
  return VecU<S>(buf->data(), std::size_t(n));
}

}  // namespace mini5d::kernels
