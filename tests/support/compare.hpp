// SPDX-License-Identifier: BSD-3-Clause
// Error measures that cannot pass on NaN or Inf. Both std::fmax(worst, NaN) and
// std::max(worst, NaN) return `worst` (every comparison with NaN is false), so a worst-
// error loop written with either scores an all-NaN gradient as error 0, and the test
// passes. Every comparison in the tests accumulates through these instead: a value
// that is not finite, on either side, makes the error +inf, which no bound accepts.
// MPI_MAX over ranks is safe after that (+inf is ordered; NaN is not).
#pragma once
#include <cmath>
#include <initializer_list>

namespace mini5d::test {

inline constexpr double kNotFinite = HUGE_VAL;

// The larger of two errors; +inf when either is NaN or infinite.
inline double worse(double a, double b) {
  if (!std::isfinite(a) || !std::isfinite(b)) return kNotFinite;
  return a < b ? b : a;
}

// The largest of several errors, +inf when any is not finite.
inline double worst_of(std::initializer_list<double> errors) {
  double w = 0;
  for (double e : errors) w = worse(w, e);
  return w;
}

// |got - want|; +inf when either is not finite.
inline double abs_error(double got, double want) {
  if (!std::isfinite(got) || !std::isfinite(want)) return kNotFinite;
  return std::fabs(got - want);
}

// |got - want| / max(floor, |want|): relative, but entries near zero are compared on the
// floor's scale instead of their own; +inf when either is not finite.
inline double floored_relative(double got, double want, double floor) {
  const double d = abs_error(got, want);
  return std::isfinite(d) ? d / std::fmax(floor, std::fabs(want)) : kNotFinite;  // nan-safe: d is finite here
}

// |got - want| / scale for a scale that is the reference's own size (a loss, a norm, a
// sum of squares); +inf when not finite, and when scale is 0 and got differs from want.
inline double relative_to(double got, double want, double scale) {
  const double d = abs_error(got, want);
  if (!std::isfinite(d) || !std::isfinite(scale)) return kNotFinite;
  if (scale == 0) return d == 0 ? 0 : kNotFinite;
  return d / std::fabs(scale);
}

// max_i |a_i - b_i| / max_i |b_i|, built up element by element: an error relative to
// the reference's scale, so tiny entries neither dominate nor hide errors.
struct ScaledError {
  double max_diff = 0, max_ref = 0;
  void add(double got, double want) {
    max_diff = worse(max_diff, abs_error(got, want));
    max_ref = worse(max_ref, std::fabs(want));
  }
  double relative() const {
    if (!std::isfinite(max_diff) || !std::isfinite(max_ref)) return kNotFinite;
    return max_ref > 0 ? max_diff / max_ref : max_diff;
  }
};

}  // namespace mini5d::test
