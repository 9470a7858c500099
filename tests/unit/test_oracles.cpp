// SPDX-License-Identifier: BSD-3-Clause
// The oracles themselves: every error measure the tests use must fail (score +inf) when
// the value under test, or the reference, holds a NaN or an Inf. A worst-error loop
// built on std::max or std::fmax drops NaN (comparisons with NaN are false), so an
// all-NaN gradient scored 0 and passed; these cases inject NaN and Inf into each helper
// and check that the result is rejected by any bound.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "compare.hpp"
#include "grad_check.hpp"

using namespace mini5d;

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kAnyBound = 1e300;  // larger than every bound a test states

// f(x) = sum_i x_i^2 / 2 on the device: its gradient is x.
double half_square(Vec<double> x) { return 0.5 * test::dot(x, x); }

Vec<double> filled(std::size_t n, double first) {
  Vec<double> v("mini5d::test::filled", n);
  auto h = Kokkos::create_mirror_view(v);
  for (std::size_t i = 0; i < n; ++i) h(i) = first + 0.25 * double(i);
  Kokkos::deep_copy(v, h);
  return v;
}

void set(Vec<double> v, std::size_t i, double value) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  h(i) = value;
  Kokkos::deep_copy(v, h);
}
}  // namespace

TEST_CASE("the naive worst-error loop passes NaN: why compare.hpp exists", "[oracle]") {
  // What the tests used to write. Kept as a check so the reason stays visible.
  CHECK(std::fmax(0.0, kNaN) == 0.0);
  CHECK(std::max(0.0, kNaN) == 0.0);
  // What they write now.
  CHECK_FALSE(test::worse(0.0, kNaN) < kAnyBound);
  CHECK_FALSE(test::worse(kNaN, 0.0) < kAnyBound);
  CHECK_FALSE(test::worse(0.0, kInf) < kAnyBound);
  CHECK_FALSE(test::worse(-kInf, 0.0) < kAnyBound);
  CHECK(test::worse(1e-9, 2e-9) == 2e-9);
}

TEST_CASE("every error measure rejects NaN and Inf on either side", "[oracle]") {
  for (double bad : {kNaN, kInf, -kInf}) {
    INFO("injected " << bad);
    CHECK_FALSE(test::abs_error(bad, 1.0) < kAnyBound);
    CHECK_FALSE(test::abs_error(1.0, bad) < kAnyBound);
    CHECK_FALSE(test::floored_relative(bad, 1.0, 1e-3) < kAnyBound);
    CHECK_FALSE(test::floored_relative(1.0, bad, 1e-3) < kAnyBound);
    CHECK_FALSE(test::relative_to(bad, 1.0, 1.0) < kAnyBound);
    CHECK_FALSE(test::relative_to(1.0, bad, 1.0) < kAnyBound);
    CHECK_FALSE(test::relative_to(1.0, 1.0, bad) < kAnyBound);
    CHECK_FALSE(test::worst_of({0.0, bad, 0.0}) < kAnyBound);
    test::ScaledError got_bad, want_bad;
    got_bad.add(1.0, 1.0);
    got_bad.add(bad, 2.0);
    want_bad.add(2.0, bad);
    want_bad.add(1.0, 1.0);
    CHECK_FALSE(got_bad.relative() < kAnyBound);
    CHECK_FALSE(want_bad.relative() < kAnyBound);
  }
  // A zero scale is exact or infinitely wrong, never 0/0.
  CHECK(test::relative_to(0.0, 0.0, 0.0) == 0.0);
  CHECK_FALSE(test::relative_to(1e-30, 0.0, 0.0) < kAnyBound);
  // Finite values are measured as before.
  CHECK(test::floored_relative(1.001, 1.0, 1e-3) == Approx(1e-3));
  CHECK(test::floored_relative(2e-3, 1e-3, 1e-2) == Approx(0.1));
}

TEST_CASE("grad_error fails on a NaN in the analytic gradient or the loss", "[oracle]") {
  const std::size_t n = 6;
  Vec<double> x = filled(n, -0.6);
  Vec<double> grad = filled(n, -0.6);  // the exact gradient of half_square
  auto loss = [&] { return half_square(x); };
  CHECK(test::grad_error(x, grad, loss) < 1e-8);  // the oracle accepts a right answer

  SECTION("one NaN entry") {
    set(grad, 3, kNaN);
    CHECK_FALSE(test::grad_error(x, grad, loss) < kAnyBound);
  }
  SECTION("every entry NaN") {
    Kokkos::deep_copy(grad, kNaN);
    CHECK_FALSE(test::grad_error(x, grad, loss) < kAnyBound);
  }
  SECTION("an infinite entry") {
    set(grad, 0, kInf);
    CHECK_FALSE(test::grad_error(x, grad, loss) < kAnyBound);
  }
  SECTION("a loss that is NaN") {
    auto nan_loss = [&] { return half_square(x) * kNaN; };
    CHECK_FALSE(test::grad_error(x, grad, nan_loss) < kAnyBound);
  }
  SECTION("a wrong but finite gradient still scores its error") {
    set(grad, 2, 0.0);
    const double e = test::grad_error(x, grad, loss);
    CHECK(e > 0.1);
    CHECK(std::isfinite(e));
  }
}

TEST_CASE("scaled_difference (the two-path comparisons) fails on NaN", "[oracle]") {
  Vec<double> a = filled(5, 1.0), b = filled(5, 1.0);
  CHECK(test::scaled_difference(a, b) == 0.0);
  set(a, 4, kNaN);
  CHECK_FALSE(test::scaled_difference(a, b) < kAnyBound);
  CHECK_FALSE(test::scaled_difference(b, a) < kAnyBound);
  Kokkos::deep_copy(a, kNaN);
  Kokkos::deep_copy(b, kNaN);
  CHECK_FALSE(test::scaled_difference(a, b) < kAnyBound);
  CHECK_FALSE(test::scaled_difference(filled(4, 1.0), filled(5, 1.0)) < kAnyBound);  // sizes differ
}
