// SPDX-License-Identifier: BSD-3-Clause
// Finite-difference checks, in fp64, of the kernels behind model.norm, model.mlp and
// model.bias (as test_kernel_gradients.cpp does for the rest: loss = sum(out * R), so the
// backward is fed dL/dout = R): RMSNorm, over one block of rows and over several
// partial-sum blocks with dx accumulating; SwiGLU's forward and backward on a fused
// gate|up input; and LayerNorm without a bias (an empty b and db). Bound: relative
// error < 1e-6 (see grad_check.hpp).
#include <catch2/catch.hpp>

#include "grad_check.hpp"
#include "mini5d/kernels/layernorm.hpp"
#include "mini5d/kernels/rmsnorm.hpp"
#include "mini5d/kernels/swiglu.hpp"

using namespace mini5d;
using test::grad_error;
using test::Tensor;
namespace k = mini5d::kernels;

namespace {
constexpr double kBound = 1e-6;

// RMSNorm over N rows of C, the tensors from seeds seed .. seed + 2 (x at scale 2, and
// shifted by 1 so that a missing mean subtraction would not go unseen: LayerNorm's
// gradient on such rows differs).
void check_rmsnorm(int N, int C, unsigned seed, bool accumulate) {
  Tensor x(N * C), w(C), y(N * C), rstd(N), R(N * C), dx(N * C), dw(C);
  test::fill_random(x.flat, seed, 2.0);
  const Vec<double> xf = x.flat;
  Kokkos::parallel_for(
      "mini5d::test::shift", Range(0, xf.extent(0)), KOKKOS_LAMBDA(const int i) { xf(i) += 1.0; });
  test::fill_random(w.flat, seed + 1);
  test::fill_random(R.flat, seed + 2);
  auto loss = [&] {
    k::rmsnorm_forward<double>(y.mat(N, C), rstd.vec(), x.mat(N, C), w.vec());
    return test::dot(y.flat, R.flat);
  };
  loss();
  k::rmsnorm_backward<double>(dx.mat(N, C), dw.vec(), R.mat(N, C), x.mat(N, C), w.vec(), rstd.vec(), accumulate);
  CHECK(grad_error(x.flat, dx.flat, loss) < kBound);
  CHECK(grad_error(w.flat, dw.flat, loss) < kBound);
}
}  // namespace

TEST_CASE("rmsnorm backward matches finite differences", "[kernels][grad][rmsnorm]") { check_rmsnorm(4, 6, 5, false); }

TEST_CASE("rmsnorm backward over several partial-sum blocks matches finite differences", "[kernels][grad][rmsnorm]") {
  // 37 rows: two blocks of kLnRows = 32, the second partial; dx accumulates.
  check_rmsnorm(k::kLnRows + 5, 5, 31, true);
}

TEST_CASE("rmsnorm forward: unit root mean square times the gain, no mean subtracted", "[kernels][rmsnorm]") {
  // One row [3, 4]: mean square 12.5, so y = x / sqrt(12.5 + eps) * w.
  Tensor x(2), w(2), y(2), rstd(1);
  auto xh = Kokkos::create_mirror_view(x.flat), wh = Kokkos::create_mirror_view(w.flat);
  xh(0) = 3, xh(1) = 4, wh(0) = 1, wh(1) = 2;
  Kokkos::deep_copy(x.flat, xh);
  Kokkos::deep_copy(w.flat, wh);
  k::rmsnorm_forward<double>(y.mat(1, 2), rstd.vec(), x.mat(1, 2), w.vec());
  auto yh = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), y.flat);
  const double rs = 1 / std::sqrt(12.5 + 1e-5);
  CHECK(yh(0) == Approx(3 * rs).epsilon(1e-14));
  CHECK(yh(1) == Approx(8 * rs).epsilon(1e-14));
}

TEST_CASE("swiglu forward and backward on fused gate|up match finite differences", "[kernels][grad][swiglu]") {
  const int N = 5, W = 7;
  Tensor h(N * 2 * W), a(N * W), R(N * W), dh(N * 2 * W);
  test::fill_random(h.flat, 41, 3.0);  // gates well into both tails of the sigmoid
  test::fill_random(R.flat, 42);
  auto loss = [&] {
    k::swiglu_forward<double>(a.mat(N, W), h.mat(N, 2 * W));
    return test::dot(a.flat, R.flat);
  };
  loss();
  k::swiglu_backward<double>(dh.mat(N, 2 * W), R.mat(N, W), h.mat(N, 2 * W));
  CHECK(grad_error(h.flat, dh.flat, loss) < kBound);
  // The pairing: a(0, 0) = silu(h(0, 0)) * h(0, W).
  auto hh = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), h.flat);
  auto ah = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a.flat);
  const double g = hh(0), u = hh(W);
  CHECK(ah(0) == Approx(g / (1 + std::exp(-g)) * u).epsilon(1e-12));
}

TEST_CASE("layernorm without a bias matches finite differences", "[kernels][grad][bias]") {
  const int N = 6, C = 5;
  Tensor x(N * C), w(C), y(N * C), mean(N), rstd(N), R(N * C), dx(N * C), dw(C);
  test::fill_random(x.flat, 51, 2.0);
  test::fill_random(w.flat, 52);
  test::fill_random(R.flat, 53);
  auto loss = [&] {
    k::layernorm_forward<double>(y.mat(N, C), mean.vec(), rstd.vec(), x.mat(N, C), w.vec(), CVecU<double>());
    return test::dot(y.flat, R.flat);
  };
  loss();
  k::layernorm_backward<double>(dx.mat(N, C), dw.vec(), VecU<double>(), R.mat(N, C), x.mat(N, C), w.vec(),
                                mean.vec(), rstd.vec(), false);
  CHECK(grad_error(x.flat, dx.flat, loss) < kBound);
  CHECK(grad_error(w.flat, dw.flat, loss) < kBound);
}
