// SPDX-License-Identifier: BSD-3-Clause
// The lint's known-bad snippet for std:: math in device code (scripts/lint-device.py
// rule 6). g++ takes it, and nvcc and hipcc mostly do too, through device overloads
// NVIDIA calls unsupported and not portable; std::min/max are constexpr, which nvcc
// compiles for the device only with --expt-relaxed-constexpr. Kernels call
// mini5d::kmath (src/mini5d/kernels/math.hpp) or write the comparison. Not built with
// the project; every line marked LINT-EXPECT must be flagged, the others not.
#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cmath>
#include <limits>

#include "mini5d/kernels/math.hpp"

namespace kmath = mini5d::kmath;

KOKKOS_INLINE_FUNCTION float gelu(float x) {
  return 0.5f * x * (1.0f + std::tanh(0.79788456f * x));  // LINT-EXPECT
}
KOKKOS_INLINE_FUNCTION float gelu_good(float x) { return 0.5f * x * (1.0f + kmath::tanh(0.79788456f * x)); }

inline float host_norm(const float* x, int n) {  // fine: host code
  float s = 0;
  for (int i = 0; i < n; ++i) s = std::max(s, std::abs(x[i]));
  return std::sqrt(s);
}

void kernels(Kokkos::View<float*> x, Kokkos::View<int*> idx, int n) {
  const float lowest = std::numeric_limits<float>::lowest();  // fine: host, then captured
  Kokkos::parallel_for(
      "snippet", n, KOKKOS_LAMBDA(const int i) {
        x(i) = std::exp(x(i));                             // LINT-EXPECT
        x(i) = kmath::exp(x(i)) + kmath::sqrt(x(i));       // fine
        x(i) = std::sqrt(x(i)) > lowest ? x(i) : lowest;   // LINT-EXPECT
        if (!std::isfinite(x(i))) x(i) = 0;                // LINT-EXPECT
        x(i) = std::abs(x(i));                             // LINT-EXPECT
        idx(i) = std::min(idx(i), n - 1);                  // LINT-EXPECT
        idx(i) = idx(i) < n - 1 ? idx(i) : n - 1;          // fine: the comparison
        x(i) = std::max<float>(x(i), 0.0f);                // LINT-EXPECT
      });
}

struct Square {
  Kokkos::View<double*> y;
  KOKKOS_FUNCTION void operator()(const int i) const {
    y(i) = std::pow(y(i), 2.0);  // LINT-EXPECT
  }
};

__host__ __device__ inline double magnitude(double v) { return std::fabs(v); }  // LINT-EXPECT
__device__ double log_one_plus(double v) { return std::log1p(v); }              // LINT-EXPECT
inline double host_log(double v) { return std::log1p(v); }                      // fine: host code
