// SPDX-License-Identifier: BSD-3-Clause
// What the bf16 kernel tests share: one set of values held as fp64, fp32 and bf16 device
// buffers (inputs drawn bf16-exact, so that all three paths start from the same numbers
// and only the kernels' arithmetic differs), and the error measure against the fp64 path.
//
// The bound of an element i is
//   u_out |ref_i| + 2^-24 e_i
// where u_out is the unit roundoff of the output's storage (2^-8 for bf16: 8 bits of
// precision counting the implicit one, round to nearest; 2^-24 for fp32 outputs, folded
// into e_i) and e_i the kernel's fp32 evaluation term (reduction length times the
// magnitudes summed), derived per kernel in its test. The tests check the fp32 path with
// u_out = 0 against the same e_i (which validates e_i), and that a wrong rounding of the
// output (truncation instead of round-to-nearest, or an fp32 result stored in bf16)
// would exceed the bound (so the check can fail).
#pragma once
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "compare.hpp"
#include "mini5d/kernels/bf16.hpp"
#include "mini5d/kernels/views.hpp"

namespace mini5d::test {

using HostVec = std::vector<double>;
constexpr double kU16 = 1.0 / 256;             // bf16 unit roundoff, 2^-8
constexpr double kEps32 = 1.0 / 16777216.0;    // fp32 unit roundoff, 2^-24

inline double round_bf16(double v) { return double(to_float(to_bf16(float(v)))); }
// Truncation toward zero to bf16: the wrong rounding the tests must catch.
inline double truncate_bf16(double v) {
  return double(bfloat16_to_float(BFloat16{std::uint16_t(detail::float_bits(float(v)) >> 16)}));
}

// n draws of N(0, scale), rounded to bf16 (so exact in every storage type).
inline HostVec bf16_exact(std::size_t n, unsigned seed, double scale = 1.0) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<double> nd(0.0, scale);
  HostVec v(n);
  for (auto& x : v) x = round_bf16(nd(gen));
  return v;
}

template <class S>
S from_double(double v) {
  if constexpr (std::is_same_v<S, bf16>)
    return to_bf16(float(v));
  else
    return S(v);
}
template <class S>
double to_double(S v) {
  if constexpr (std::is_same_v<S, bf16>)
    return double(to_float(v));
  else
    return double(v);
}

// A flat device buffer of S with matrix and vector views over it.
template <class S>
struct Buf {
  Vec<S> flat;
  explicit Buf(std::size_t n) : flat("mini5d::test::bf16_buf", n) {
    auto h = Kokkos::create_mirror_view(flat);
    for (std::size_t i = 0; i < n; ++i) h(i) = from_double<S>(0.0);
    Kokkos::deep_copy(flat, h);
  }
  explicit Buf(const HostVec& v) : flat("mini5d::test::bf16_buf", v.size()) {
    auto h = Kokkos::create_mirror_view(flat);
    for (std::size_t i = 0; i < v.size(); ++i) h(i) = from_double<S>(v[i]);
    Kokkos::deep_copy(flat, h);
  }
  MatU<S> mat(int r, int c) const { return MatU<S>(flat.data(), r, c); }
  VecU<S> vec() const { return VecU<S>(flat.data(), flat.extent(0)); }
  HostVec host() const {
    auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), flat);
    HostVec v(h.extent(0));
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = to_double(h(i));
    return v;
  }
};

// max_i |got_i - ref_i| / (u_out |ref_i| + 2^-24 e_i): <= 1 when the bound holds; +inf
// when a value on either side, or a bound, is not finite (compare.hpp).
inline double worst_ratio(const HostVec& got, const HostVec& ref, const HostVec& e, double u_out) {
  double w = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const double bound = u_out * std::fabs(ref[i]) + kEps32 * e[i];
    w = worse(w, relative_to(got[i], ref[i], bound));
  }
  return w;
}

// The largest error in units of the output's own roundoff, |got - ref| / (u |ref|), over
// the elements not near zero (|ref| above 1e-3 of the largest): for the report; +inf
// when a value is not finite.
inline double worst_in_u(const HostVec& got, const HostVec& ref, double u) {
  double big = 0, w = 0;
  for (double r : ref) big = worse(big, std::fabs(r));
  for (std::size_t i = 0; i < ref.size(); ++i)
    if (!(std::fabs(ref[i]) <= 1e-3 * big)) w = worse(w, relative_to(got[i], ref[i], u * std::fabs(ref[i])));
  return w;
}

inline HostVec map(const HostVec& v, double (*f)(double)) {
  HostVec o(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) o[i] = f(v[i]);
  return o;
}

// The whole check of one bf16 output against the fp64 reference: the bf16 path within
// u |ref| + 2^-24 e, the fp32 path within 2^-24 e, and a truncated output outside.
// Prints the figures (the report quotes them).
struct Figures {
  double bf16_ratio, fp32_ratio, trunc_ratio, bf16_in_u;
};
inline Figures check_bf16_output(const std::string& what, const HostVec& bf, const HostVec& f32, const HostVec& ref,
                                 const HostVec& e) {
  const Figures f{worst_ratio(bf, ref, e, kU16), worst_ratio(f32, ref, e, 0.0),
                  worst_ratio(map(ref, truncate_bf16), ref, e, kU16), worst_in_u(bf, ref, kU16)};
  std::printf("bf16 %-28s err/bound %.3f (worst %.3f u)  fp32 path err/(2^-24 e) %.3f  truncated %.3f\n",
              what.c_str(), f.bf16_ratio, f.bf16_in_u, f.fp32_ratio, f.trunc_ratio);
  return f;
}

// The same for an output kept in fp32 (statistics, parameter gradients): both paths
// within 2^-24 e, and the output stored in bf16 instead would be outside.
inline Figures check_fp32_output(const std::string& what, const HostVec& bf, const HostVec& f32, const HostVec& ref,
                                 const HostVec& e) {
  const Figures f{worst_ratio(bf, ref, e, 0.0), worst_ratio(f32, ref, e, 0.0),
                  worst_ratio(map(ref, round_bf16), ref, e, 0.0), 0.0};
  std::printf("fp32 %-28s err/bound %.3f  fp32 path %.3f  stored in bf16 %.1f\n", what.c_str(), f.bf16_ratio,
              f.fp32_ratio, f.trunc_ratio);
  return f;
}

// The three figures every check must meet.
inline void require_figures(const Figures& f) {
  CHECK(f.bf16_ratio <= 1.0);
  CHECK(f.fp32_ratio <= 1.0);
  CHECK(f.trunc_ratio > 1.0);
}

}  // namespace mini5d::test
