// SPDX-License-Identifier: BSD-3-Clause
// The attention products' two paths (kernels/batched_gemm.hpp) and the online-softmax
// recurrence (kernels/online_softmax.hpp), in fp64 on one rank:
//   * the batched GEMM's team path (the one launch a GPU takes) equals the BLAS loop
//     (the host default) on every N/T combination, with alpha and beta, on strided
//     operands;
//   * causal attention forward and backward give the same tensors on both paths, and
//     the gradient through the team path matches finite differences;
//   * the online-softmax recurrence over two chunks (a full and two diagonal blocks)
//     equals single-rank causal attention, and its backward matches finite
//     differences, on both paths.
// The shapes are off every block, team and vector size (7-row chunks, head size 5,
// 11 queries in causal blocks of 4), so partial tiles and ranges are exercised.
#include <catch2/catch.hpp>
#include <cmath>

#include "grad_check.hpp"
#include "mini5d/kernels/attention.hpp"
#include "mini5d/kernels/batched_gemm.hpp"
#include "mini5d/kernels/online_softmax.hpp"

using namespace mini5d;
using test::grad_error;
using test::Tensor;
namespace k = mini5d::kernels;

namespace {
constexpr double kBound = 1e-6;  // finite differences (grad_check.hpp)
constexpr double kSame = 1e-12;  // the two paths differ only in summation order

double rel_diff(const Vec<double>& a, const Vec<double>& b) { return test::scaled_difference(a, b); }

Tensor copy_of(const Tensor& t) {
  Tensor c(std::int64_t(t.flat.extent(0)));
  Kokkos::deep_copy(c.flat, t.flat);
  return c;
}

const k::GemmPath kPaths[] = {k::GemmPath::blas_loop, k::GemmPath::teams};
const char* path_name(k::GemmPath p) { return p == k::GemmPath::teams ? "teams" : "blas_loop"; }
}  // namespace

TEST_CASE("batched GEMM: the team path equals the BLAS loop", "[kernels][batched]") {
  // 3 products of C[7 x 5] (a row slice of a [3, 9, 5] tensor, so strided in the batch)
  // from A, B stored as op requires: A is [7 x 6] or [6 x 7], B [6 x 5] or [5 x 6].
  const int nb = 3, m = 7, n = 5, kk = 6, rows = 9;
  for (const k::Op ta : {k::Op::N, k::Op::T})
    for (const k::Op tb : {k::Op::N, k::Op::T}) {
      const int ar = ta == k::Op::N ? m : kk, ac = ta == k::Op::N ? kk : m;
      const int br = tb == k::Op::N ? kk : n, bc = tb == k::Op::N ? n : kk;
      Tensor a(nb * ar * ac), b(nb * br * bc), c(nb * rows * n);
      test::fill_random(a.flat, 1);
      test::fill_random(b.flat, 2);
      test::fill_random(c.flat, 3);
      Tensor c_blas = copy_of(c), c_team = copy_of(c);
      const CTen3U<double> A = a.ten(nb, ar, ac), B = b.ten(nb, br, bc);
      for (const k::GemmPath path : kPaths) {
        const k::ScopedGemmPath forced(path);
        const Ten3U<double> C = (path == k::GemmPath::teams ? c_team : c_blas).ten(nb, rows, n);
        // beta = 1 keeps the old C: rows 1..7 of each matrix are updated, 0 and 8 not.
        k::batched_gemm<double>("mini5d::test::batched_gemm", ta, tb, 0.75, 1.0, nb, KOKKOS_LAMBDA(const int i) {
          return k::GemmOperands<double>{Kokkos::subview(A, i, Kokkos::ALL(), Kokkos::ALL()),
                                         Kokkos::subview(B, i, Kokkos::ALL(), Kokkos::ALL()),
                                         Kokkos::subview(C, i, Kokkos::make_pair(1, 1 + m), Kokkos::ALL())};
        });
      }
      INFO("op_a " << (ta == k::Op::N ? "N" : "T") << ", op_b " << (tb == k::Op::N ? "N" : "T"));
      CHECK(rel_diff(c_team.flat, c_blas.flat) < kSame);
      // And against a direct sum, element by element.
      auto ha = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a.flat);
      auto hb = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), b.flat);
      auto h0 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), c.flat);
      auto ht = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), c_team.flat);
      double worst = 0;
      for (int i = 0; i < nb; ++i)
        for (int r = 0; r < rows; ++r)
          for (int j = 0; j < n; ++j) {
            double want = h0((i * rows + r) * n + j);
            if (r >= 1 && r < 1 + m) {
              double acc = 0;
              for (int p = 0; p < kk; ++p) {
                const double av = ta == k::Op::N ? ha((i * ar + (r - 1)) * ac + p) : ha((i * ar + p) * ac + (r - 1));
                const double bv = tb == k::Op::N ? hb((i * br + p) * bc + j) : hb((i * br + j) * bc + p);
                acc += av * bv;
              }
              want += 0.75 * acc;
            }
            worst = test::worse(worst, test::abs_error(ht((i * rows + r) * n + j), want));
          }
      CHECK(worst < 1e-13);
    }
}

namespace {
// Causal attention core on permuted heads [BH, T, hd], blocks of 4 over 11 queries.
struct CoreRig {
  int BH = 6, T = 11, hd = 5, block = 4;
  Tensor q{BH * T * hd}, kk{BH * T * hd}, v{BH * T * hd}, y{BH * T * hd}, p{BH * T * T};
  Ten3U<double> t(const Tensor& x, int last) const { return x.ten(BH, T, last); }
  CoreRig() {
    test::fill_random(q.flat, 11);
    test::fill_random(kk.flat, 12);
    test::fill_random(v.flat, 13);
  }
  void forward() { k::attention_forward<double>(t(y, hd), t(p, T), t(q, hd), t(kk, hd), t(v, hd), block); }
  void backward(Tensor& dq, Tensor& dk, Tensor& dv, const Tensor& dy) {
    Tensor dp(BH * T * T);
    k::attention_backward<double>(t(dq, hd), t(dk, hd), t(dv, hd), t(dp, T), t(dy, hd), t(p, T), t(q, hd),
                                  t(kk, hd), t(v, hd), block);
  }
};
}  // namespace

TEST_CASE("causal attention: the team-path products equal the BLAS loop, forward and backward",
          "[kernels][batched]") {
  CoreRig blas, team;
  const int n = blas.BH * blas.T * blas.hd;
  Tensor dy(n), dq[2] = {Tensor(n), Tensor(n)}, dk[2] = {Tensor(n), Tensor(n)}, dv[2] = {Tensor(n), Tensor(n)};
  test::fill_random(dy.flat, 14);
  {
    const k::ScopedGemmPath forced(k::GemmPath::blas_loop);
    blas.forward();
    blas.backward(dq[0], dk[0], dv[0], dy);
  }
  {
    const k::ScopedGemmPath forced(k::GemmPath::teams);
    team.forward();
    team.backward(dq[1], dk[1], dv[1], dy);
  }
  CHECK(rel_diff(team.y.flat, blas.y.flat) < kSame);
  CHECK(rel_diff(team.p.flat, blas.p.flat) < kSame);
  CHECK(rel_diff(dq[1].flat, dq[0].flat) < kSame);
  CHECK(rel_diff(dk[1].flat, dk[0].flat) < kSame);
  CHECK(rel_diff(dv[1].flat, dv[0].flat) < kSame);
}

TEST_CASE("causal attention backward through the team-path products matches finite differences",
          "[kernels][batched][grad]") {
  const k::ScopedGemmPath forced(k::GemmPath::teams);
  CoreRig a;
  const int n = a.BH * a.T * a.hd;
  Tensor R(n), dq(n), dk(n), dv(n);
  test::fill_random(R.flat, 15);
  auto loss = [&] {
    a.forward();
    return test::dot(a.y.flat, R.flat);
  };
  loss();
  a.backward(dq, dk, dv, R);
  CHECK(grad_error(a.q.flat, dq.flat, loss) < kBound);
  CHECK(grad_error(a.kk.flat, dk.flat, loss) < kBound);
  CHECK(grad_error(a.v.flat, dv.flat, loss) < kBound);
}

namespace {
// The online-softmax recurrence as a ring of one sees it, over two chunks of n rows:
// query chunk 0 meets key chunk 0 (diagonal); chunk 1 meets chunk 0 (full), then
// chunk 1 (diagonal).
struct OnlineRig {
  int BH = 3, n = 7, hd = 5, T = 2 * n;
  Tensor q{BH * T * hd}, kk{BH * T * hd}, v{BH * T * hd}, y{BH * T * hd};
  Tensor m{BH * T}, l{BH * T}, lse{BH * T}, s{BH * n * n}, dp{BH * n * n};
  Ten3U<double> t(const Tensor& x) const { return x.ten(BH, T, hd); }
  Ten3U<double> block_buf(const Tensor& x) const { return x.ten(BH, n, n); }
  MatU<double> rowv(const Tensor& x) const { return x.mat(BH, T); }
  OnlineRig() {
    test::fill_random(q.flat, 21);
    test::fill_random(kk.flat, 22);
    test::fill_random(v.flat, 23);
  }
  static constexpr int kBlocks = 3;
  k::BlockRows blocks(int i) const {
    const k::BlockRows all[kBlocks] = {{0, 0, n, n, true}, {n, 0, n, n, false}, {n, n, n, n, true}};
    return all[i];
  }
  void forward() {
    k::online_softmax_init<double>(t(y), rowv(m), rowv(l));
    for (int i = 0; i < kBlocks; ++i)
      k::online_softmax_block<double>(t(y), rowv(m), rowv(l), block_buf(s), t(q), t(kk), t(v), blocks(i));
    k::online_softmax_finish<double>(t(y), rowv(lse), rowv(m), rowv(l));
  }
  void backward(Tensor& dq, Tensor& dk, Tensor& dv, const Tensor& dy) {
    Tensor delta(BH * T);
    k::online_softmax_delta<double>(rowv(delta), t(dy), t(y));
    Kokkos::deep_copy(dq.flat, 0.0);
    Kokkos::deep_copy(dk.flat, 0.0);
    Kokkos::deep_copy(dv.flat, 0.0);
    for (int i = 0; i < kBlocks; ++i)
      k::online_softmax_block_backward<double>(t(dq), t(dk), t(dv), block_buf(s), block_buf(dp), t(dy), rowv(lse),
                                               rowv(delta), t(q), t(kk), t(v), blocks(i));
  }
};
}  // namespace

TEST_CASE("online softmax over blocks equals causal attention and matches finite differences",
          "[kernels][online_softmax][grad]") {
  for (const k::GemmPath path : kPaths) {
    const k::ScopedGemmPath forced(path);
    INFO("products: " << path_name(path));
    OnlineRig a;
    const int n = a.BH * a.T * a.hd;
    Tensor R(n), dq(n), dk(n), dv(n);
    test::fill_random(R.flat, 24);
    a.forward();

    // The same inputs through single-rank causal attention (one causal block).
    Tensor y_ref(n), p_ref(a.BH * a.T * a.T), dq_ref(n), dk_ref(n), dv_ref(n), dp_ref(a.BH * a.T * a.T);
    const auto t3 = [&](const Tensor& x, int last) { return x.ten(a.BH, a.T, last); };
    k::attention_forward<double>(t3(y_ref, a.hd), t3(p_ref, a.T), a.t(a.q), a.t(a.kk), a.t(a.v));
    k::attention_backward<double>(t3(dq_ref, a.hd), t3(dk_ref, a.hd), t3(dv_ref, a.hd), t3(dp_ref, a.T),
                                  t3(R, a.hd), t3(p_ref, a.T), a.t(a.q), a.t(a.kk), a.t(a.v));
    CHECK(rel_diff(a.y.flat, y_ref.flat) < kSame);

    auto loss = [&] {
      a.forward();
      return test::dot(a.y.flat, R.flat);
    };
    loss();
    a.backward(dq, dk, dv, R);
    CHECK(rel_diff(dq.flat, dq_ref.flat) < kSame);
    CHECK(rel_diff(dk.flat, dk_ref.flat) < kSame);
    CHECK(rel_diff(dv.flat, dv_ref.flat) < kSame);
    CHECK(grad_error(a.q.flat, dq.flat, loss) < kBound);
    CHECK(grad_error(a.kk.flat, dk.flat, loss) < kBound);
    CHECK(grad_error(a.v.flat, dv.flat, loss) < kBound);
  }
}
