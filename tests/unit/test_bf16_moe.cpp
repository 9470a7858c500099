// SPDX-License-Identifier: BSD-3-Clause
// The mixture-of-experts row kernels (kernels/moe.hpp) in bf16 against fp32, both
// referenced to fp64 (the scheme of test_bf16_kernels.cpp): the combine, its backward
// and the dispatch's backward. Token rows are the storage type; the combine weights and
// their gradient are acc_t (fp32 for bf16). A routing row of -1 (a dropped assignment)
// is in the map, so the skip is exercised. fp32 terms, in units of 2^-24: a k-term sum
// of products is within k + 1 relative of each |term| summed (each product rounded
// once, k - 1 additions); one product is within 1.
#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "bf16_check.hpp"
#include "mini5d/kernels/moe.hpp"

using namespace mini5d;
using namespace mini5d::test;
namespace k = mini5d::kernels;

namespace {
constexpr int R = 24, K = 2, D = 40;  // tokens, assignments per token, width
constexpr int A = R * K;              // assignment rows (one dropped)

// row(a): a permutation of the assignments onto the send rows, one dropped (-1).
std::vector<int> routing_rows() {
  std::vector<int> row(A);
  for (int a = 0; a < A; ++a) row[std::size_t(a)] = (a * 7 + 3) % A;
  row[5] = -1;
  return row;
}

k::IVecU device_rows(Vec<int>& keep, const std::vector<int>& row) {
  keep = Vec<int>("mini5d::test::rows", row.size());
  auto h = Kokkos::create_mirror_view(keep);
  for (std::size_t i = 0; i < row.size(); ++i) h(i) = row[i];
  Kokkos::deep_copy(keep, h);
  return k::IVecU(keep.data(), row.size());
}
}  // namespace

TEST_CASE("bf16 MoE combine, its backward and the dispatch backward: fp32 sums, one rounding", "[bf16][kernels]") {
  const std::vector<int> row = routing_rows();
  const HostVec y = bf16_exact(std::size_t(A) * D, 51), w = bf16_exact(std::size_t(R) * K, 52, 0.5),
                dout = bf16_exact(std::size_t(R) * D, 53);
  auto run = [&](auto tag) {
    using S = decltype(tag);
    using Acc = acc_t<S>;
    Vec<int> keep;
    const k::IVecU rows = device_rows(keep, row);
    Buf<S> yb(y), dob(dout), out{std::size_t(R) * D}, dy{std::size_t(A) * D}, dx{std::size_t(R) * D};
    Buf<Acc> wb(w), dw{std::size_t(R) * K};
    k::combine_rows<S>(out.mat(R, D), yb.mat(A, D), rows, wb.mat(R, K));
    k::combine_rows_backward<S>(dw.mat(R, K), dy.mat(A, D), dob.mat(R, D), yb.mat(A, D), rows, wb.mat(R, K));
    k::dispatch_rows_backward<S>(dx.mat(R, D), yb.mat(A, D), rows, K);
    return std::vector<HostVec>{out.host(), dy.host(), dx.host(), dw.host()};
  };
  const auto ref = run(double()), f32 = run(float()), bf = run(bf16());
  HostVec e_out(std::size_t(R) * D, 0), e_dy(std::size_t(A) * D, 0), e_dx(std::size_t(R) * D, 0),
      e_dw(std::size_t(R) * K, 0);
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < K; ++j) {
      const int at = row[std::size_t(r * K + j)];
      if (at < 0) continue;
      for (int c = 0; c < D; ++c) {
        const double wy = std::fabs(w[std::size_t(r * K + j)] * y[std::size_t(at) * D + c]);
        const double wd = std::fabs(w[std::size_t(r * K + j)] * dout[std::size_t(r) * D + c]);
        e_out[std::size_t(r) * D + c] += (K + 1) * wy;
        e_dy[std::size_t(at) * D + c] = wd;
        e_dx[std::size_t(r) * D + c] += K * std::fabs(y[std::size_t(at) * D + c]);
        e_dw[std::size_t(r * K + j)] += (D + 1) * std::fabs(dout[std::size_t(r) * D + c] * y[std::size_t(at) * D + c]);
      }
    }
  require_figures(check_bf16_output("moe combine", bf[0], f32[0], ref[0], e_out));
  require_figures(check_bf16_output("moe combine backward dy", bf[1], f32[1], ref[1], e_dy));
  require_figures(check_bf16_output("moe dispatch backward dx", bf[2], f32[2], ref[2], e_dx));
  // dw is fp32 in both paths: within 2^-24 e of fp64, and the bf16 path computes it from
  // the same bf16-exact inputs, so it is the fp32 path's result exactly.
  CHECK(worst_ratio(f32[3], ref[3], e_dw, 0.0) <= 1.0);
  CHECK(bf[3] == f32[3]);
  // The dropped assignment's send row (that of assignment 5 had it been kept) gets no
  // gradient in any path; a kept one does.
  const std::size_t unused = std::size_t((5 * 7 + 3) % A) * D, used = std::size_t(row[4]) * D;
  for (int c = 0; c < D; ++c) CHECK((ref[1][unused + c] == 0.0 && bf[1][unused + c] == 0.0));
  CHECK(ref[1][used] != 0.0);
}
