// SPDX-License-Identifier: BSD-3-Clause
// Device-callable math that works on Kokkos 3.4 (functions in Kokkos::Experimental)
// and Kokkos >= 4 (functions in Kokkos::). Kernels call mini5d::kmath::exp etc. and
// never std:: math, which is host-only on some backends.
#pragma once
#include <Kokkos_Core.hpp>

namespace mini5d::kmath {
#if KOKKOS_VERSION >= 40000
using Kokkos::exp;
using Kokkos::log;
using Kokkos::sqrt;
using Kokkos::tanh;
using Kokkos::cos;
#else
using Kokkos::Experimental::exp;
using Kokkos::Experimental::log;
using Kokkos::Experimental::sqrt;
using Kokkos::Experimental::tanh;
using Kokkos::Experimental::cos;
#endif
}  // namespace mini5d::kmath
