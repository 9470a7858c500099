// SPDX-License-Identifier: BSD-3-Clause
// GELU, SwiGLU and the residual adds in bf16 against fp32, both referenced to fp64 (see
// test_bf16_kernels.cpp for the scheme). The fp32 terms, in units of 2^-24: exp_fast is
// within 3.4 ulp (math.hpp: relative error < 2e-7), so sigmoid and fast_tanh's 2/(E + 1)
// are within ~8 relative; an argument u known to 4 relative moves exp(2u) by 8|u|.
#include <catch2/catch.hpp>
#include <cmath>

#include "bf16_check.hpp"
#include "mini5d/kernels/gelu.hpp"
#include "mini5d/kernels/residual.hpp"
#include "mini5d/kernels/swiglu.hpp"

using namespace mini5d;
using namespace mini5d::test;
namespace k = mini5d::kernels;

namespace {
constexpr int N = 40, C = 96;
constexpr double kK = 0.7978845608028654;  // sqrt(2/pi)

// fast_tanh(inner(v)) errs by at most T(v) = 16 |inner| + 15: 2/(E + 1) with E = exp(2
// inner) is off by (8 |inner| + 7) relative and at most 2 in size, and 1 - q adds one.
double tanh_term(double v) { return 16 * kK * (std::fabs(v) + 0.044715 * std::fabs(v * v * v)) + 15; }

}  // namespace

TEST_CASE("bf16 gelu: forward and backward with the bias gradient in fp32", "[bf16][kernels]") {
  const HostVec x = bf16_exact(N * C, 31, 1.5), dy = bf16_exact(N * C, 32);
  auto run = [&](auto tag) {
    using S = decltype(tag);
    Buf<S> xb(x), dyb(dy), y{std::size_t(N * C)}, dx{std::size_t(N * C)};
    Buf<acc_t<S>> db{std::size_t(C)};
    k::gelu_forward<S>(y.mat(N, C), xb.mat(N, C));
    k::gelu_backward_bias<S>(dx.mat(N, C), db.vec(), dyb.mat(N, C), xb.mat(N, C));
    return std::vector<HostVec>{y.host(), dx.host(), db.host()};
  };
  const auto ref = run(double()), f32 = run(float()), bf = run(bf16());
  HostVec ey(N * C), edx(N * C), edb(C, 0.0);
  for (int i = 0; i < N * C; ++i) {
    const double v = std::fabs(x[i]), T = tanh_term(x[i]);
    const double th = std::tanh(kK * (x[i] + 0.044715 * x[i] * x[i] * x[i]));
    const double dinner = kK * (1 + 3 * 0.044715 * x[i] * x[i]);
    // y = 0.5 v (1 + th): th's error, the products' roundings, the store.
    ey[i] = 0.5 * v * (T + 2) + 3 * std::fabs(ref[0][i]);
    // slope = 0.5 (1 + th) + 0.5 v (1 - th^2) dinner; 1 - th^2 errs by 2 T + 2.
    const double eslope = 0.5 * (T + 2) + 0.5 * v * dinner * (2 * T + 2) + 3 * v * (1 - th * th) * dinner;
    edx[i] = std::fabs(dy[i]) * eslope + 2 * std::fabs(ref[1][i]);
    edb[i % C] += std::fabs(dy[i]) * eslope + (N + 1) * std::fabs(ref[1][i]);
  }
  require_figures(check_bf16_output("gelu y", bf[0], f32[0], ref[0], ey));
  require_figures(check_bf16_output("gelu dx", bf[1], f32[1], ref[1], edx));
  require_figures(check_fp32_output("gelu db (N=40)", bf[2], f32[2], ref[2], edb));
}

TEST_CASE("bf16 bias + gelu: the stored pre-activation is rounded once", "[bf16][kernels]") {
  const HostVec h0 = bf16_exact(N * C, 33), b = bf16_exact(C, 34);
  auto run = [&](auto tag) {
    using S = decltype(tag);
    Buf<S> h(h0), bb(b), y{std::size_t(N * C)};
    k::bias_gelu_forward<S>(y.mat(N, C), h.mat(N, C), bb.vec());
    return h.host();
  };
  const HostVec ref = run(double()), f32 = run(float()), bf = run(bf16());
  HostVec e(N * C);
  for (int i = 0; i < N * C; ++i) e[i] = std::fabs(h0[i]) + std::fabs(b[i % C]);  // one fp32 add
  require_figures(check_bf16_output("bias+gelu h = h + b", bf, f32, ref, e));
}

TEST_CASE("bf16 swiglu: forward and backward computed in fp32, one rounding", "[bf16][kernels]") {
  constexpr int W = C / 2;
  const HostVec h = bf16_exact(N * 2 * W, 35, 1.5), da = bf16_exact(N * W, 36);
  auto run = [&](auto tag) {
    using S = decltype(tag);
    Buf<S> hb(h), dab(da), a{std::size_t(N * W)}, dh{std::size_t(N * 2 * W)};
    k::swiglu_forward<S>(a.mat(N, W), hb.mat(N, 2 * W));
    k::swiglu_backward<S>(dh.mat(N, 2 * W), dab.mat(N, W), hb.mat(N, 2 * W));
    return std::vector<HostVec>{a.host(), dh.host()};
  };
  const auto ref = run(double()), f32 = run(float()), bf = run(bf16());
  HostVec ea(N * W), edh(N * 2 * W);
  for (int r = 0; r < N; ++r)
    for (int c = 0; c < W; ++c) {
      const double g = h[r * 2 * W + c], u = h[r * 2 * W + W + c], d = da[r * W + c];
      const double s = 1 / (1 + std::exp(-g));
      // sigmoid within 8 relative; each product and the store one more.
      ea[r * W + c] = 12 * std::fabs(ref[0][r * W + c]);
      edh[r * 2 * W + W + c] = 12 * std::fabs(ref[1][r * 2 * W + W + c]);
      // d u s (1 + g (1 - s)): 1 - s errs by 8 s + 1, the bracket by |g| that + 2 (1 + |g (1 - s)|).
      edh[r * 2 * W + c] = std::fabs(d * u * s) * (std::fabs(g) * (8 * s + 2) + 2 * (1 + std::fabs(g * (1 - s)))) +
                           12 * std::fabs(ref[1][r * 2 * W + c]);
    }
  require_figures(check_bf16_output("swiglu a", bf[0], f32[0], ref[0], ea));
  require_figures(check_bf16_output("swiglu dh", bf[1], f32[1], ref[1], edh));
}

TEST_CASE("bf16 residual add and accumulate: the sum in fp32, one rounding", "[bf16][kernels]") {
  const HostVec a = bf16_exact(N * C, 37), b = bf16_exact(N * C, 38, 0.01);
  auto run = [&](auto tag) {
    using S = decltype(tag);
    Buf<S> ab(a), bb(b), y{std::size_t(N * C)}, acc(a);
    k::add<S>(y.mat(N, C), ab.mat(N, C), bb.mat(N, C));
    k::accumulate<S>(acc.mat(N, C), bb.mat(N, C));
    return std::vector<HostVec>{y.host(), acc.host()};
  };
  const auto ref = run(double()), f32 = run(float()), bf = run(bf16());
  HostVec e(N * C);
  for (int i = 0; i < N * C; ++i) e[i] = std::fabs(a[i]) + std::fabs(b[i]);  // one fp32 add
  require_figures(check_bf16_output("residual add", bf[0], f32[0], ref[0], e));
  require_figures(check_bf16_output("residual accumulate", bf[1], f32[1], ref[1], e));
}
