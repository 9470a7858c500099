// SPDX-License-Identifier: BSD-3-Clause
// The lint's known-bad snippet for device code calling a host-only member function:
// g++ compiles it; nvcc only warns (#20011/#20014) and the call is undefined on a GPU.
#include <Kokkos_Core.hpp>

struct Shape {
  int heads, head_dim;
  int width() const { return heads * head_dim; }                        // host-only
  KOKKOS_INLINE_FUNCTION int rows() const { return heads; }              // device-callable
  constexpr int lanes() const { return head_dim; }                       // constexpr: callable
};

struct Permute {
  Shape s;
  Kokkos::View<float*> out;
  KOKKOS_INLINE_FUNCTION void operator()(const int i) const {
    out(i) = float(s.width());  // LINT-EXPECT
    out(i) += float(s.rows() + s.lanes());
  }
};

void launch(const Shape s, Kokkos::View<float*> out) {
  const int w = s.width();  // fine: host code
  Kokkos::parallel_for(
      "snippet", w, KOKKOS_LAMBDA(const int i) {
        out(i) = float(s.width());  // LINT-EXPECT
        out(i) += float(out.extent(0));  // fine: a Kokkos member
      });
}
