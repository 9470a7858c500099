// SPDX-License-Identifier: BSD-3-Clause
// Sets every element of a contiguous View to one value, in a kernel the caller names.
// Used inside the step instead of Kokkos::deep_copy(view, value), which launches
// Kokkos' own kernel ("Kokkos::ViewFill-1D": a profile shows Kokkos, not the caller)
// and, with no execution space given, fences every queue first (Kokkos 4).
#pragma once
#include "mini5d/kernels/views.hpp"

namespace mini5d::kernels {

template <class View>
void fill(const char* label, const View& v, typename View::non_const_value_type value) {
  static_assert(Kokkos::is_view<View>::value, "kernels::fill takes a Kokkos::View");
  using T = typename View::non_const_value_type;
  // Every caller passes a whole View or a leading slice: one contiguous span.
  T* p = v.data();
  Kokkos::parallel_for(label, Range(0, std::int64_t(v.span())), KOKKOS_LAMBDA(const std::int64_t i) { p[i] = value; });
}

}  // namespace mini5d::kernels
