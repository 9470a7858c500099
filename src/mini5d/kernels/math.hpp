// SPDX-License-Identifier: BSD-3-Clause
// Device-callable math that works on Kokkos 3.4 (functions in Kokkos::Experimental)
// and Kokkos >= 4 (functions in Kokkos::). Kernels call mini5d::kmath::exp etc. and
// never std:: math, which is host-only on some backends.
#pragma once
#include <Kokkos_Core.hpp>
#include <type_traits>

namespace mini5d::kmath {
#if KOKKOS_VERSION >= 40000
using Kokkos::exp;
using Kokkos::log;
using Kokkos::sqrt;
using Kokkos::tanh;
using Kokkos::cos;
using Kokkos::sin;
#else
using Kokkos::Experimental::exp;
using Kokkos::Experimental::log;
using Kokkos::Experimental::sqrt;
using Kokkos::Experimental::tanh;
using Kokkos::Experimental::cos;
using Kokkos::Experimental::sin;
#endif

// exp for the elementwise kernels' hot loops. For float it is a branch-free Cody-Waite
// reduction plus a degree-6 polynomial (relative error < 2e-7, about one fp32 ulp), which
// the compiler can vectorise, where a libm call per element cannot be. For double (the
// gradient checks) it is the library exp.
template <class S>
KOKKOS_INLINE_FUNCTION S exp_fast(S x) {
  if constexpr (std::is_same_v<S, float>) {
    x = x < -87.0f ? -87.0f : (x > 88.0f ? 88.0f : x);
    // n = round(x / ln2) without a libm call: add and subtract 1.5 * 2^23.
    const float shifter = 12582912.0f;
    const float n = (x * 1.44269504f + shifter) - shifter;
    const float r = (x - n * 0.693145752f) - n * 1.42860677e-6f;  // ln2 split hi + lo
    const float p =
        1.0f + r * (1.0f + r * (0.5f + r * (0.166666672f + r * (0.0416666679f + r * (0.00833333377f + r * 0.00138888892f)))));
    union {
      int i;
      float f;
    } two_n;
    two_n.i = (int(n) + 127) << 23;  // 2^n, n in [-126, 127]
    return p * two_n.f;
  } else {
    return exp(x);
  }
}
}  // namespace mini5d::kmath
