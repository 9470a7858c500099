// SPDX-License-Identifier: BSD-3-Clause
// Each kernel's bf16 path against its fp32 path, both referenced to fp64: the same
// bf16-exact inputs through the double, float and bf16 instantiations. The bound of an
// output element is u |ref| + 2^-24 e (bf16_check.hpp): u = 2^-8, the one rounding of a
// bf16 output (8 bits of precision), and e the fp32 evaluation term derived below for
// each kernel from its reduction length (first order in 2^-24; ~ K for a K-term sum).
// Outputs kept in fp32 under bf16 (statistics, parameter gradients) are held to the fp32
// term alone. Each check also shows that the bound can fail: a truncated bf16 output, or
// an fp32 output stored in bf16, is outside it.
#include <catch2/catch.hpp>
#include <cmath>

#include "bf16_check.hpp"
#include "mini5d/kernels/gelu.hpp"
#include "mini5d/kernels/layernorm.hpp"
#include "mini5d/kernels/linear.hpp"
#include "mini5d/kernels/residual.hpp"
#include "mini5d/kernels/rmsnorm.hpp"
#include "mini5d/kernels/swiglu.hpp"

using namespace mini5d;
using namespace mini5d::test;
namespace k = mini5d::kernels;

namespace {


// y = x w^T + b, then dx = dy w, dw = dy^T x, db = column sums of dy. N = 300 rows
// spans two of the bf16 path's 256-row panels.
constexpr int N = 300, I = 64, O = 48;
struct LinearIn {
  HostVec x = bf16_exact(N * I, 11), w = bf16_exact(O * I, 12, 0.2), b = bf16_exact(O, 13), dy = bf16_exact(N * O, 14);
};
template <class S>
std::vector<HostVec> linear_run(const LinearIn& in) {
  using A = acc_t<S>;
  Buf<S> x(in.x), w(in.w), b(in.b), dy(in.dy), y{std::size_t(N * O)}, dx{std::size_t(N * I)};
  Buf<A> dw{std::size_t(O * I)}, db{std::size_t(O)}, ones(HostVec(N, 1.0));
  k::linear_forward<S>(y.mat(N, O), x.mat(N, I), w.mat(O, I), b.vec());
  k::linear_backward<S>(dx.mat(N, I), dw.mat(O, I), db.vec(), dy.mat(N, O), x.mat(N, I), w.mat(O, I), ones.vec());
  return {y.host(), dx.host(), dw.host(), db.host()};
}

}  // namespace

TEST_CASE("bf16 linear: products in fp32 from bf16 operands, one rounding", "[bf16][kernels]") {
  const LinearIn in;
  const auto ref = linear_run<double>(in), f32 = linear_run<float>(in), bf = linear_run<bf16>(in);
  // A K-term fp32 dot product errs by at most K 2^-24 sum|terms| (any summation order,
  // so the panels do not matter), the bias add one rounding more: e = (K + 2) sum|terms|.
  HostVec ey(N * O), edx(N * I), edw(O * I), edb(O);
  for (int r = 0; r < N; ++r)
    for (int o = 0; o < O; ++o) {
      double s = std::fabs(in.b[o]);
      for (int i = 0; i < I; ++i) s += std::fabs(in.x[r * I + i] * in.w[o * I + i]);
      ey[r * O + o] = (I + 2) * s;
    }
  for (int r = 0; r < N; ++r)
    for (int i = 0; i < I; ++i) {
      double s = 0;
      for (int o = 0; o < O; ++o) s += std::fabs(in.dy[r * O + o] * in.w[o * I + i]);
      edx[r * I + i] = (O + 2) * s;
    }
  for (int o = 0; o < O; ++o) {
    double sb = 0;
    for (int r = 0; r < N; ++r) sb += std::fabs(in.dy[r * O + o]);
    edb[o] = (N + 2) * sb;
    for (int i = 0; i < I; ++i) {
      double s = 0;
      for (int r = 0; r < N; ++r) s += std::fabs(in.dy[r * O + o] * in.x[r * I + i]);
      edw[o * I + i] = (N + 2) * s;
    }
  }
  require_figures(check_bf16_output("linear y = x w^T + b (K=64)", bf[0], f32[0], ref[0], ey));
  require_figures(check_bf16_output("linear dx = dy w (K=48)", bf[1], f32[1], ref[1], edx));
  require_figures(check_fp32_output("linear dw = dy^T x (K=300)", bf[2], f32[2], ref[2], edw));
  require_figures(check_fp32_output("linear db (K=300)", bf[3], f32[3], ref[3], edb));
}

TEST_CASE("bf16 linear: the input gradient accumulates in fp32 with one rounding", "[bf16][kernels]") {
  const LinearIn in;
  const HostVec prior = bf16_exact(N * I, 15);
  auto run = [&](auto tag) {
    using S = decltype(tag);
    Buf<S> dy(in.dy), w(in.w), dx(prior);
    k::linear_backward_input<S>(dx.mat(N, I), dy.mat(N, O), w.mat(O, I), true);
    return dx.host();
  };
  const HostVec ref = run(double()), f32 = run(float()), bf = run(bf16());
  HostVec e(N * I);
  for (int r = 0; r < N; ++r)
    for (int i = 0; i < I; ++i) {
      double s = std::fabs(prior[r * I + i]);
      for (int o = 0; o < O; ++o) s += std::fabs(in.dy[r * O + o] * in.w[o * I + i]);
      e[r * I + i] = (O + 3) * s;
    }
  require_figures(check_bf16_output("linear dx += dy w", bf, f32, ref, e));
}
