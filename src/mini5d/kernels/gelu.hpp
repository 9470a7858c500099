// SPDX-License-Identifier: BSD-3-Clause
// GELU, tanh approximation (GPT-2's choice): 0.5 x (1 + tanh(k (x + 0.044715 x^3))).
#pragma once
#include "mini5d/kernels/math.hpp"
#include "mini5d/kernels/views.hpp"

namespace mini5d::kernels {

// tanh through one exp: libm's tanhf costs ~4x an expf, and GELU evaluates it on every
// MLP activation twice per step. Saturates correctly: exp -> inf gives 1, exp -> 0 gives
// -1. Near 0 the cancellation costs a few ulps of absolute error, far below the fp32
// noise of the surrounding matrix products (the fp64 gradient checks confirm).
template <class S>
KOKKOS_INLINE_FUNCTION S fast_tanh(S u) {
  return S(1) - S(2) / (kmath::exp_fast(S(2) * u) + S(1));
}

// Elementwise over the flat, contiguous data (LayoutRight): one index per element maps
// to a thread on GPUs and lets the compiler vectorise the loop on CPUs.
template <class S>
void gelu_forward(MatU<S> y, CMatU<S> x) {
  const VecU<S> yf(y.data(), y.size());
  const CVecU<S> xf(x.data(), x.size());
  Kokkos::parallel_for(
      "mini5d::kernels::gelu_forward", Range(0, xf.extent(0)), KOKKOS_LAMBDA(const std::int64_t i) {
        const S k = S(0.7978845608028654);  // sqrt(2/pi)
        const S v = xf(i);
        yf(i) = S(0.5) * v * (S(1) + fast_tanh(k * (v + S(0.044715) * v * v * v)));
      });
}

// dx = dy * gelu'(x) (overwritten).
template <class S>
void gelu_backward(MatU<S> dx, CMatU<S> dy, CMatU<S> x) {
  const VecU<S> dxf(dx.data(), dx.size());
  const CVecU<S> dyf(dy.data(), dy.size()), xf(x.data(), x.size());
  Kokkos::parallel_for(
      "mini5d::kernels::gelu_backward", Range(0, xf.extent(0)), KOKKOS_LAMBDA(const std::int64_t i) {
        const S k = S(0.7978845608028654);
        const S v = xf(i);
        const S th = fast_tanh(k * (v + S(0.044715) * v * v * v));
        const S dinner = k * (S(1) + S(3 * 0.044715) * v * v);
        dxf(i) = dyf(i) * (S(0.5) * (S(1) + th) + S(0.5) * v * (S(1) - th * th) * dinner);
      });
}

}  // namespace mini5d::kernels
