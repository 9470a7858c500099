// SPDX-License-Identifier: BSD-3-Clause
// Grouped-query attention (model.kv_heads; kernels/attention.hpp, blockwise_attention.hpp,
// online_softmax.hpp), in fp64 on shapes that are not multiples of the causal block:
//   * the full core (causal blocks of 4 over 11 rows) and the blockwise core (tiles of
//     4, and one tile) match finite differences in q, k and v, with 4 query heads over
//     2 and over 1 key/value heads;
//   * both equal the multi-head reference on the same queries with each key/value head
//     copied to the query heads of its group (query head h reads kv head h / (H/Hkv)):
//     the outputs agree, dq agrees, and each kv head's dk and dv are the sum of its
//     copies' gradients;
//   * the fused path (qkv rows [N, (H + 2 Hkv) hd] split into heads and merged back)
//     matches finite differences in qkv.
#include <catch2/catch.hpp>

#include "fd_harness.hpp"
#include "grad_check.hpp"
#include "mini5d/kernels/attention.hpp"
#include "mini5d/kernels/blockwise_attention.hpp"

using namespace mini5d;
using test::Tensor;
namespace k = mini5d::kernels;

namespace {
constexpr double kFd = 1e-6, kRounding = 1e-12;

// B = 2 sequences of T = 11, H = 4 query heads of hd = 5 over Hkv key/value heads.
struct GqaRig {
  int B = 2, T = 11, hd = 5, H = 4, Hkv, block;
  int BH = B * H, BK = B * Hkv;
  Tensor q{BH * T * hd}, kk{BK * T * hd}, v{BK * T * hd}, y{BH * T * hd}, p{BH * T * T}, lse{BH * T};
  k::BlockwiseWork<double> work;
  GqaRig(int kv, int blk) : Hkv(kv), block(blk) {
    const int tile = k::blockwise_tile(T, block), panel = k::blockwise_panel(T);
    work.s = Ten3<double>("s", BH, tile, panel);
    work.dp = Ten3<double>("dp", BH, tile, panel);
    work.l = Mat<double>("l", BH, T);
    test::fill_random(q.flat, 51);
    test::fill_random(kk.flat, 52);
    test::fill_random(v.flat, 53);
  }
  Ten3U<double> t(const Tensor& x, int rows, int last = 0) const { return x.ten(rows, T, last ? last : hd); }
  void forward(bool blockwise) {
    if (blockwise)
      k::blockwise_attention_forward<double>(t(y, BH), lse.mat(BH, T), t(q, BH), t(kk, BK), t(v, BK), work, block);
    else
      k::attention_forward<double>(t(y, BH), t(p, BH, T), t(q, BH), t(kk, BK), t(v, BK), block);
  }
  void backward(bool blockwise, Tensor& dq, Tensor& dk, Tensor& dv, const Tensor& dy) {
    if (blockwise) {
      k::blockwise_attention_backward<double>(t(dq, BH), t(dk, BK), t(dv, BK), t(dy, BH), t(y, BH), lse.mat(BH, T),
                                              t(q, BH), t(kk, BK), t(v, BK), work, block);
    } else {
      Tensor dp(BH * T * T);
      k::attention_backward<double>(t(dq, BH), t(dk, BK), t(dv, BK), t(dp, BH, T), t(dy, BH), t(p, BH, T), t(q, BH),
                                    t(kk, BK), t(v, BK), block);
    }
  }
};

// [B*Hkv, T, hd] -> [B*H, T, hd]: query matrix bh gets key/value matrix bh / (H/Hkv).
Tensor expand(const GqaRig& a, const Tensor& x) {
  const int g = a.H / a.Hkv, m = a.T * a.hd;
  Tensor out(a.BH * m);
  auto hx = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), x.flat);
  auto ho = Kokkos::create_mirror_view(out.flat);
  for (int bh = 0; bh < a.BH; ++bh)
    for (int i = 0; i < m; ++i) ho(bh * m + i) = hx((bh / g) * m + i);
  Kokkos::deep_copy(out.flat, ho);
  return out;
}
// The inverse's adjoint: sums each group's gradients into its key/value matrix.
Tensor reduce(const GqaRig& a, const Tensor& x) {
  const int g = a.H / a.Hkv, m = a.T * a.hd;
  Tensor out(a.BK * m);
  auto hx = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), x.flat);
  auto ho = Kokkos::create_mirror_view(out.flat);
  for (int i = 0; i < a.BK * m; ++i) ho(i) = 0;
  for (int bh = 0; bh < a.BH; ++bh)
    for (int i = 0; i < m; ++i) ho((bh / g) * m + i) += hx(bh * m + i);
  Kokkos::deep_copy(out.flat, ho);
  return out;
}

void check_core(int kv, int block, bool blockwise) {
  INFO((blockwise ? "blockwise" : "full") << " core, kv_heads " << kv << ", block " << block);
  GqaRig a(kv, block);
  const int nq = a.BH * a.T * a.hd, nk = a.BK * a.T * a.hd;
  Tensor R(nq), dq(nq), dk(nk), dv(nk);
  test::fill_random(R.flat, 54);
  auto loss = [&] {
    a.forward(blockwise);
    return test::dot(a.y.flat, R.flat);
  };
  loss();
  a.backward(blockwise, dq, dk, dv, R);
  // The multi-head reference on the expanded keys and values (full core, whole T).
  const Tensor ke = expand(a, a.kk), ve = expand(a, a.v);
  Tensor y_ref(nq), p_ref(a.BH * a.T * a.T), dq_ref(nq), dk_ref(nq), dv_ref(nq), dp_ref(a.BH * a.T * a.T);
  k::attention_forward<double>(a.t(y_ref, a.BH), a.t(p_ref, a.BH, a.T), a.t(a.q, a.BH), a.t(ke, a.BH),
                               a.t(ve, a.BH));
  k::attention_backward<double>(a.t(dq_ref, a.BH), a.t(dk_ref, a.BH), a.t(dv_ref, a.BH), a.t(dp_ref, a.BH, a.T),
                                a.t(R, a.BH), a.t(p_ref, a.BH, a.T), a.t(a.q, a.BH), a.t(ke, a.BH), a.t(ve, a.BH));
  CHECK(test::scaled_difference(a.y.flat, y_ref.flat) < kRounding);
  CHECK(test::scaled_difference(dq.flat, dq_ref.flat) < kRounding);
  CHECK(test::scaled_difference(dk.flat, reduce(a, dk_ref).flat) < kRounding);
  CHECK(test::scaled_difference(dv.flat, reduce(a, dv_ref).flat) < kRounding);
  CHECK(test::grad_error(a.q.flat, dq.flat, loss) < kFd);
  CHECK(test::grad_error(a.kk.flat, dk.flat, loss) < kFd);
  CHECK(test::grad_error(a.v.flat, dv.flat, loss) < kFd);
}
}  // namespace

TEST_CASE("grouped-query full attention matches finite differences and the multi-head reference",
          "[kernels][gqa][grad]") {
  for (const int kv : {2, 1}) {
    check_core(kv, 4, false);            // causal blocks of 4, 4 and 3 rows
    check_core(kv, k::kAttBlock, false);  // one block
  }
}

TEST_CASE("grouped-query blockwise attention matches finite differences and the multi-head reference",
          "[kernels][gqa][blockwise][grad]") {
  for (const int kv : {2, 1}) {
    check_core(kv, 4, true);
    check_core(kv, k::kAttBlock, true);
  }
}

TEST_CASE("grouped-query attention through the fused QKV rows matches finite differences", "[kernels][gqa][grad]") {
  // qkv [N, (H + 2 Hkv) hd] = [22, 40]: 4 query heads and 2 key/value heads of 5.
  const k::AttentionShape s{2, 11, 4, 5, 2};
  const int N = s.batch * s.seq, W = (s.heads + 2 * s.kv_heads) * s.head_dim, D = s.d_model();
  const int BH = s.batch * s.heads, BK = s.batch * s.kv_heads, T = s.seq, hd = s.head_dim;
  Tensor qkv(N * W), out(N * D), R(N * D), q(BH * T * hd), kk(BK * T * hd), v(BK * T * hd), y(BH * T * hd),
      p(BH * T * T);
  test::fill_random(qkv.flat, 61);
  test::fill_random(R.flat, 62);
  auto loss = [&] {
    k::attention_split_heads<double>(q.ten(BH, T, hd), kk.ten(BK, T, hd), v.ten(BK, T, hd), qkv.mat(N, W), s);
    k::attention_forward<double>(y.ten(BH, T, hd), p.ten(BH, T, T), q.ten(BH, T, hd), kk.ten(BK, T, hd),
                                 v.ten(BK, T, hd), 4);
    k::attention_merge_heads<double>(out.mat(N, D), y.ten(BH, T, hd), s);
    return test::dot(out.flat, R.flat);
  };
  loss();
  Tensor dy(BH * T * hd), dq(BH * T * hd), dk(BK * T * hd), dv(BK * T * hd), dp(BH * T * T), dqkv(N * W);
  k::attention_split_heads_grad<double>(dy.ten(BH, T, hd), R.mat(N, D), s);
  k::attention_backward<double>(dq.ten(BH, T, hd), dk.ten(BK, T, hd), dv.ten(BK, T, hd), dp.ten(BH, T, T),
                                dy.ten(BH, T, hd), p.ten(BH, T, T), q.ten(BH, T, hd), kk.ten(BK, T, hd),
                                v.ten(BK, T, hd), 4);
  k::attention_merge_heads_qkv<double>(dqkv.mat(N, W), dq.ten(BH, T, hd), dk.ten(BK, T, hd), dv.ten(BK, T, hd), s);
  CHECK(test::grad_error(qkv.flat, dqkv.flat, loss) < kFd);
}
