// SPDX-License-Identifier: BSD-3-Clause
// LayerNorm and RMSNorm in bf16 against fp32, both referenced to fp64 (see
// test_bf16_kernels.cpp for the scheme): statistics and the parameter gradients stay
// fp32 under bf16 and are held to the fp32 term alone; y and dx are rounded to bf16 once.
// The fp32 terms below follow the error, in units of 2^-24, through each step of the
// kernel to first order; C is the row length, N the rows (two backward blocks of 32).
#include <catch2/catch.hpp>
#include <cmath>

#include "bf16_check.hpp"
#include "mini5d/kernels/layernorm.hpp"
#include "mini5d/kernels/rmsnorm.hpp"

using namespace mini5d;
using namespace mini5d::test;
namespace k = mini5d::kernels;

namespace {

constexpr int N = 40, C = 64;
struct NormIn {
  // x off zero (mean 0.5, scale 2), so that the mean matters.
  HostVec x, w = bf16_exact(C, 22), b = bf16_exact(C, 23), dy = bf16_exact(N * C, 24);
  NormIn() : x(bf16_exact(N * C, 21, 2.0)) {
    for (auto& v : x) v = round_bf16(v + 0.5);
  }
};

template <class S>
std::vector<HostVec> layernorm_run(const NormIn& in) {
  using A = acc_t<S>;
  Buf<S> x(in.x), w(in.w), b(in.b), dy(in.dy), y{std::size_t(N * C)}, dx{std::size_t(N * C)};
  Buf<A> mean{std::size_t(N)}, rstd{std::size_t(N)}, dw{std::size_t(C)}, db{std::size_t(C)};
  k::layernorm_forward<S>(y.mat(N, C), mean.vec(), rstd.vec(), x.mat(N, C), w.vec(), b.vec());
  k::layernorm_backward<S>(dx.mat(N, C), dw.vec(), db.vec(), dy.mat(N, C), x.mat(N, C), w.vec(), mean.vec(),
                           rstd.vec(), false);
  return {y.host(), mean.host(), rstd.host(), dx.host(), dw.host(), db.host()};
}

template <class S>
std::vector<HostVec> rmsnorm_run(const NormIn& in) {
  using A = acc_t<S>;
  Buf<S> x(in.x), w(in.w), dy(in.dy), y{std::size_t(N * C)}, dx{std::size_t(N * C)};
  Buf<A> rstd{std::size_t(N)}, dw{std::size_t(C)};
  k::rmsnorm_forward<S>(y.mat(N, C), rstd.vec(), x.mat(N, C), w.vec());
  k::rmsnorm_backward<S>(dx.mat(N, C), dw.vec(), dy.mat(N, C), x.mat(N, C), w.vec(), rstd.vec(), false);
  return {y.host(), rstd.host(), dx.host(), dw.host()};
}


}  // namespace

TEST_CASE("bf16 layernorm: fp32 statistics, one rounding of y and dx", "[bf16][kernels]") {
  const NormIn in;
  const auto ref = layernorm_run<double>(in), f32 = layernorm_run<float>(in), bf = layernorm_run<bf16>(in);
  HostVec ey(N * C), em(N), ers(N), edx(N * C), edw(C, 0.0), edb(C, 0.0);
  for (int r = 0; r < N; ++r) {
    const double* x = &in.x[r * C];
    const double m = ref[1][r], rs = ref[2][r];
    double abs_x = 0, abs_d = 0;
    for (int c = 0; c < C; ++c) abs_x += std::fabs(x[c]) / C, abs_d += std::fabs(x[c] - m) / C;
    const double var = 1.0 / (rs * rs);
    // mean: a C-term sum and a division; var: C squares of (x - m) whose m errs by dm;
    // rstd: half var's relative error plus the sqrt and the division.
    const double dm = (C + 1) * abs_x, dvar = (C + 3) + 2 * dm * abs_d / var, drs = 0.5 * dvar + 2;
    em[r] = dm;
    ers[r] = drs * rs;
    // dx = rs (g w - sg - xhat sgx) with sg = mean(g w), sgx = mean(g w xhat).
    double sg = 0, sgx = 0, abs_gw = 0, abs_gwx = 0, gw_dxhat = 0;
    for (int c = 0; c < C; ++c) {
      const double xhat = (x[c] - m) * rs, gw = in.dy[r * C + c] * in.w[c];
      const double dxhat = rs * dm + std::fabs(xhat) * (drs + 2);  // xhat = (x - m) rs
      sg += gw / C, sgx += gw * xhat / C, abs_gw += std::fabs(gw) / C, abs_gwx += std::fabs(gw * xhat) / C;
      gw_dxhat += std::fabs(gw) * dxhat / C;
      ey[r * C + c] = std::fabs(in.w[c]) * dxhat + 2 * (std::fabs(xhat * in.w[c]) + std::fabs(in.b[c])) +
                      std::fabs(ref[0][r * C + c]);
      edw[c] += std::fabs(in.dy[r * C + c]) * (dxhat + (N + 1) * std::fabs(xhat));
      edb[c] += (N + 1) * std::fabs(in.dy[r * C + c]);
    }
    const double dsg = (C + 2) * abs_gw, dsgx = (C + 3) * abs_gwx + gw_dxhat;
    for (int c = 0; c < C; ++c) {
      const double xhat = (x[c] - m) * rs, gw = in.dy[r * C + c] * in.w[c];
      const double dxhat = rs * dm + std::fabs(xhat) * (drs + 2);
      const double dB = dsg + std::fabs(xhat) * dsgx + dxhat * std::fabs(sgx) +
                        3 * (std::fabs(gw) + std::fabs(sg) + std::fabs(xhat * sgx));
      edx[r * C + c] = rs * dB + std::fabs(ref[3][r * C + c]) * (drs + 2);
    }
  }
  require_figures(check_bf16_output("layernorm y (C=64)", bf[0], f32[0], ref[0], ey));
  require_figures(check_fp32_output("layernorm mean", bf[1], f32[1], ref[1], em));
  require_figures(check_fp32_output("layernorm rstd", bf[2], f32[2], ref[2], ers));
  require_figures(check_bf16_output("layernorm dx", bf[3], f32[3], ref[3], edx));
  require_figures(check_fp32_output("layernorm dw (N=40)", bf[4], f32[4], ref[4], edw));
  require_figures(check_fp32_output("layernorm db (N=40)", bf[5], f32[5], ref[5], edb));
}

TEST_CASE("bf16 rmsnorm: fp32 statistic, one rounding of y and dx", "[bf16][kernels]") {
  const NormIn in;
  const auto ref = rmsnorm_run<double>(in), f32 = rmsnorm_run<float>(in), bf = rmsnorm_run<bf16>(in);
  HostVec ey(N * C), ers(N), edx(N * C), edw(C, 0.0);
  for (int r = 0; r < N; ++r) {
    const double* x = &in.x[r * C];
    const double rs = ref[1][r];
    const double drs = 0.5 * (C + 2) + 2;  // mean of C squares, then sqrt and division
    ers[r] = drs * rs;
    double mgx = 0, abs_gwx = 0, gw_dxhat = 0;
    for (int c = 0; c < C; ++c) {
      const double xhat = x[c] * rs, gw = in.dy[r * C + c] * in.w[c];
      const double dxhat = std::fabs(xhat) * (drs + 1);
      mgx += gw * xhat / C, abs_gwx += std::fabs(gw * xhat) / C, gw_dxhat += std::fabs(gw) * dxhat / C;
      ey[r * C + c] = std::fabs(in.w[c]) * dxhat + 2 * std::fabs(ref[0][r * C + c]);
      edw[c] += std::fabs(in.dy[r * C + c]) * (dxhat + (N + 1) * std::fabs(xhat));
    }
    const double dmgx = (C + 4) * abs_gwx + gw_dxhat;
    for (int c = 0; c < C; ++c) {
      const double xhat = x[c] * rs, gw = in.dy[r * C + c] * in.w[c];
      const double dxhat = std::fabs(xhat) * (drs + 1);
      const double dB = std::fabs(xhat) * dmgx + dxhat * std::fabs(mgx) + 3 * (std::fabs(gw) + std::fabs(xhat * mgx));
      edx[r * C + c] = rs * dB + std::fabs(ref[2][r * C + c]) * (drs + 2);
    }
  }
  require_figures(check_bf16_output("rmsnorm y (C=64)", bf[0], f32[0], ref[0], ey));
  require_figures(check_fp32_output("rmsnorm rstd", bf[1], f32[1], ref[1], ers));
  require_figures(check_bf16_output("rmsnorm dx", bf[2], f32[2], ref[2], edx));
  require_figures(check_fp32_output("rmsnorm dw (N=40)", bf[3], f32[3], ref[3], edw));
}
