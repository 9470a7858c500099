// SPDX-License-Identifier: BSD-3-Clause
// Finite-difference gradient checking in fp64. The error of a gradient is measured as
// max_i |analytic_i - numeric_i| / max_i |numeric_i|: relative to the gradient's scale,
// so tiny entries (exact zeros under the causal mask, say) neither dominate nor hide
// errors. Central differences with h = 1e-6 have truncation error O(h^2) ~ 1e-12 and
// rounding error ~ eps / h ~ 1e-10 relative, so a correct kernel scores below ~1e-8;
// the tests allow 1e-6, and a wrong term (sign, factor, missing path) scores ~1e-1.
#pragma once
#include <cmath>
#include <functional>
#include <random>
#include <string>

#include "compare.hpp"
#include "mini5d/kernels/views.hpp"

namespace mini5d::test {

// A flat fp64 buffer with 1-D, 2-D or 3-D unmanaged views over it.
struct Tensor {
  Vec<double> flat;
  Tensor() = default;
  explicit Tensor(std::int64_t n, const char* label = "mini5d::test::tensor") : flat(std::string(label), std::size_t(n)) {}
  MatU<double> mat(int r, int c) const { return MatU<double>(flat.data(), r, c); }
  Ten3U<double> ten(int a, int b, int c) const { return Ten3U<double>(flat.data(), a, b, c); }
  VecU<double> vec() const { return VecU<double>(flat.data(), flat.extent(0)); }
};

inline void fill_random(Vec<double> v, unsigned seed, double scale = 1.0) {
  auto h = Kokkos::create_mirror_view(v);
  std::mt19937_64 gen(seed);
  std::normal_distribution<double> nd(0.0, scale);
  for (std::size_t i = 0; i < h.extent(0); ++i) h(i) = nd(gen);
  Kokkos::deep_copy(v, h);
}

inline double dot(Vec<double> a, Vec<double> b) {
  double s = 0;
  Kokkos::parallel_reduce(
      "mini5d::test::dot", Range(0, a.extent(0)),
      KOKKOS_LAMBDA(const int i, double& acc) { acc += a(i) * b(i); }, s);
  return s;
}

// (f(x0 + h) - f(x0 - h)) / 2h for one coordinate: put(x) places the coordinate's value
// (wherever it lives: a device buffer, a model's parameters, one rank's shard) before f
// runs; the coordinate is left at x0.
template <class Put, class F>
double central_difference(double x0, double h, Put&& put, F&& f) {
  put(x0 + h);
  const double up = f();
  put(x0 - h);
  const double down = f();
  put(x0);
  return (up - down) / (2 * h);
}

// The error measure above, accumulated over the elements of one gradient; a NaN or Inf
// on either side makes it +inf (compare.hpp).
struct FdError {
  ScaledError e;
  void add(double numeric, double analytic) { e.add(analytic, numeric); }
  double relative() const { return e.relative(); }
  double scale() const { return e.max_ref; }  // max |numeric|
};

// max_i |got_i - want_i| / max_i |want_i| over two buffers of one size; +inf when either
// holds a NaN or Inf.
inline double scaled_difference(const Vec<double>& got, const Vec<double>& want) {
  auto hg = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), got);
  auto hw = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), want);
  if (hg.extent(0) != hw.extent(0)) return kNotFinite;
  ScaledError e;
  for (std::size_t i = 0; i < hg.extent(0); ++i) e.add(hg(i), hw(i));
  return e.relative();
}

// Compares `analytic` (dL/dx) with central differences of loss() over every element
// of x; returns the relative error defined above.
inline double grad_error(Vec<double> x, Vec<double> analytic, const std::function<double()>& loss,
                         double h = 1e-6) {
  auto hx = Kokkos::create_mirror_view(x);
  auto ha = Kokkos::create_mirror_view(analytic);
  Kokkos::deep_copy(ha, analytic);
  FdError err;
  for (std::size_t i = 0; i < x.extent(0); ++i) {
    Kokkos::deep_copy(hx, x);
    auto put = [&](double v) {
      hx(i) = v;
      Kokkos::deep_copy(x, hx);
    };
    err.add(central_difference(hx(i), h, put, loss), ha(i));
  }
  return err.relative();
}

}  // namespace mini5d::test
