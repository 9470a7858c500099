// SPDX-License-Identifier: BSD-3-Clause
// Blockwise attention at c = 1 (kernels/blockwise_attention.hpp, model.attention):
//   * in fp64, on head tensors, its forward and backward equal full attention's
//     (kernels/attention.hpp) to rounding and its gradients match finite differences,
//     on both product paths, with one tile and with three (the last one short);
#include <catch2/catch.hpp>
#include <cmath>

#include "grad_check.hpp"
#include "mini5d/kernels/attention.hpp"
#include "mini5d/kernels/blockwise_attention.hpp"

using namespace mini5d;
using test::grad_error;
using test::Tensor;
namespace k = mini5d::kernels;

namespace {
constexpr double kBound = 1e-6;  // finite differences (grad_check.hpp)
constexpr double kSame = 1e-12;  // the two cores differ only in summation order

const k::GemmPath kPaths[] = {k::GemmPath::blas_loop, k::GemmPath::teams};

// q, k, v of BH (batch, head) matrices [T, hd] through the blockwise core in tiles of
// `block` rows.
struct BlockwiseRig {
  int BH = 4, T = 11, hd = 5, block = 4;
  Tensor q{BH * T * hd}, kk{BH * T * hd}, v{BH * T * hd}, y{BH * T * hd}, lse{BH * T};
  k::BlockwiseWork<double> work;
  explicit BlockwiseRig(int blk) : block(blk) {
    const int tile = k::blockwise_tile(T, block);
    work.s = Ten3<double>("s", BH, tile, tile);
    work.dp = Ten3<double>("dp", BH, tile, tile);
    work.l = Mat<double>("l", BH, T);
    test::fill_random(q.flat, 31);
    test::fill_random(kk.flat, 32);
    test::fill_random(v.flat, 33);
  }
  Ten3U<double> t(const Tensor& x, int last = 0) const { return x.ten(BH, T, last ? last : hd); }
  void forward() { k::blockwise_attention_forward<double>(t(y), lse.mat(BH, T), t(q), t(kk), t(v), work, block); }
  void backward(Tensor& dq, Tensor& dk, Tensor& dv, const Tensor& dy) {
    k::blockwise_attention_backward<double>(t(dq), t(dk), t(dv), t(dy), t(y), lse.mat(BH, T), t(q), t(kk), t(v),
                                            work, block);
  }
};

void check_against_full(int block) {
  for (const k::GemmPath path : kPaths) {
    const k::ScopedGemmPath forced(path);
    INFO("tile " << block << ", products " << (path == k::GemmPath::teams ? "teams" : "blas_loop"));
    BlockwiseRig a(block);
    const int n = a.BH * a.T * a.hd;
    Tensor R(n), dq(n), dk(n), dv(n);
    test::fill_random(R.flat, 34);
    Tensor y_ref(n), p_ref(a.BH * a.T * a.T), dq_ref(n), dk_ref(n), dv_ref(n), dp_ref(a.BH * a.T * a.T);
    k::attention_forward<double>(a.t(y_ref), a.t(p_ref, a.T), a.t(a.q), a.t(a.kk), a.t(a.v));
    k::attention_backward<double>(a.t(dq_ref), a.t(dk_ref), a.t(dv_ref), a.t(dp_ref, a.T), a.t(R), a.t(p_ref, a.T),
                                  a.t(a.q), a.t(a.kk), a.t(a.v));
    auto loss = [&] {
      a.forward();
      return test::dot(a.y.flat, R.flat);
    };
    loss();
    CHECK(test::scaled_difference(a.y.flat, y_ref.flat) < kSame);
    a.backward(dq, dk, dv, R);
    CHECK(test::scaled_difference(dq.flat, dq_ref.flat) < kSame);
    CHECK(test::scaled_difference(dk.flat, dk_ref.flat) < kSame);
    CHECK(test::scaled_difference(dv.flat, dv_ref.flat) < kSame);
    CHECK(grad_error(a.q.flat, dq.flat, loss) < kBound);
    CHECK(grad_error(a.kk.flat, dk.flat, loss) < kBound);
    CHECK(grad_error(a.v.flat, dv.flat, loss) < kBound);
  }
}
}  // namespace

TEST_CASE("blockwise attention equals full attention and matches finite differences", "[kernels][blockwise][grad]") {
  check_against_full(4);              // tiles of 4, 4 and 3 rows: full, diagonal and short tiles
  check_against_full(k::kAttBlock);  // one tile of all 11 rows
}

TEST_CASE("blockwise attention keeps the log-sum-exp of each query row", "[kernels][blockwise]") {
  BlockwiseRig a(4);
  a.forward();
  auto hq = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a.q.flat);
  auto hk = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a.kk.flat);
  auto hl = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a.lse.flat);
  const int T = a.T, hd = a.hd;
  double worst = 0;
  for (int bh = 0; bh < a.BH; ++bh)
    for (int i = 0; i < T; ++i) {
      double sum = 0;
      for (int j = 0; j <= i; ++j) {
        double s = 0;
        for (int d = 0; d < hd; ++d) s += hq((bh * T + i) * hd + d) * hk((bh * T + j) * hd + d);
        sum += std::exp(s / std::sqrt(double(hd)));
      }
      worst = test::worse(worst, test::abs_error(hl(bh * T + i), std::log(sum)));
    }
  CHECK(worst < 1e-12);
}
