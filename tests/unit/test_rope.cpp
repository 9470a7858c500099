// SPDX-License-Identifier: BSD-3-Clause
// Rotary positions (kernels/rope.hpp), in fp64:
//   * the table holds cos and sin of global position x theta^(-2i/head_dim), at the
//     positions of a zig-zag split (parallel/cp/zigzag.hpp) too;
//   * the backward (the inverse rotation) matches finite differences of
//     loss = sum(rope(x) * R) at the positions of every rank of a c = 2 zig-zag split;
//   * position 0 is the identity, and the rotation keeps every pair's length;
//   * q.k depends only on the relative position: with the same q and k at every token,
//     the score of tokens at global positions a and b is f(a - b), whichever rank (of a
//     zig-zag split) holds them, and f is not constant (the rotation does act);
//   * the model's fused path (q and k turned as the heads are split, dq and dk turned
//     back as they are merged, kernels/attention.hpp) equals the reference kernels
//     here, with grouped-query heads and zig-zag positions, and leaves v untouched.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <vector>

#include "compare.hpp"
#include "grad_check.hpp"
#include "mini5d/kernels/attention.hpp"
#include "mini5d/kernels/rope.hpp"
#include "mini5d/parallel/cp/zigzag.hpp"

using namespace mini5d;
using test::Tensor;
namespace k = mini5d::kernels;

namespace {
constexpr double kTheta = 10000;

k::RopeTable<double> table(const k::Positions& pos, int hd, double theta = kTheta) {
  k::RopeTable<double> t{Mat<double>("cos", pos.local_seq, hd / 2), Mat<double>("sin", pos.local_seq, hd / 2)};
  k::rope_table<double>(t, pos, hd, theta);
  return t;
}

std::vector<double> host(const Vec<double>& v) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  return std::vector<double>(h.data(), h.data() + h.extent(0));
}

// x [R, T, hd] with the same q-like vector at every (row, token): rows of one pattern.
Tensor constant_rows(int R, int T, int hd, unsigned seed) {
  Tensor one(hd), x(std::int64_t(R) * T * hd);
  test::fill_random(one.flat, seed);
  const auto o = host(one.flat);
  auto h = Kokkos::create_mirror_view(x.flat);
  for (int n = 0; n < R * T; ++n)
    for (int j = 0; j < hd; ++j) h(std::size_t(n) * hd + j) = o[std::size_t(j)];
  Kokkos::deep_copy(x.flat, h);
  return x;
}
}  // namespace

TEST_CASE("rope: the table holds the angles of the global positions, zig-zag included", "[kernels][rope]") {
  const int seq = 16, hd = 6;
  const cp::Split split{2, true};
  for (int rank = 0; rank < 2; ++rank) {
    const k::Positions pos = split.positions(rank, seq);
    const auto t = table(pos, hd, 500.0);
    auto c = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), t.cos);
    auto s = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), t.sin);
    REQUIRE(c.extent(0) == std::size_t(seq / 2));
    for (int tl = 0; tl < seq / 2; ++tl)
      for (int i = 0; i < hd / 2; ++i) {
        // rank 0 holds chunks 0 and 3 of 4 (positions 0-3, 12-15), rank 1 chunks 1 and 2.
        const int g = rank == 0 ? (tl < 4 ? tl : 8 + tl) : 4 + tl;
        const double angle = g * std::pow(500.0, -2.0 * i / hd);
        CHECK(c(tl, i) == Approx(std::cos(angle)).margin(1e-14));
        CHECK(s(tl, i) == Approx(std::sin(angle)).margin(1e-14));
      }
  }
}

TEST_CASE("rope: the backward matches finite differences at zig-zag positions", "[kernels][grad][rope]") {
  const int R = 3, seq = 16, hd = 8, T = seq / 2;
  const cp::Split split{2, true};
  for (int rank = 0; rank < 2; ++rank) {
    const auto tab = table(split.positions(rank, seq), hd);
    const std::int64_t n = std::int64_t(R) * T * hd;
    Tensor x(n), y(n), Rr(n), dx(n);
    test::fill_random(x.flat, 10 + rank);
    test::fill_random(Rr.flat, 20 + rank);
    auto loss = [&] {
      Kokkos::deep_copy(y.flat, x.flat);
      k::rope_forward<double>(y.ten(R, T, hd), tab);
      return test::dot(y.flat, Rr.flat);
    };
    Kokkos::deep_copy(dx.flat, Rr.flat);
    k::rope_backward<double>(dx.ten(R, T, hd), tab);
    const double err = test::grad_error(x.flat, dx.flat, loss);
    INFO("rank " << rank << " relative error " << err);
    CHECK(err < 1e-6);
    // A backward that turned forward again (the sign of sin) would miss by O(1).
    Tensor wrong(n);
    Kokkos::deep_copy(wrong.flat, Rr.flat);
    k::rope_forward<double>(wrong.ten(R, T, hd), tab);
    CHECK(test::grad_error(x.flat, wrong.flat, loss) > 1e-2);
  }
}

TEST_CASE("rope: position 0 is the identity and every pair keeps its length", "[kernels][rope]") {
  const int R = 2, T = 5, hd = 8;
  const auto tab = table(k::Positions(T), hd);
  Tensor x(R * T * hd), y(R * T * hd);
  test::fill_random(x.flat, 3);
  Kokkos::deep_copy(y.flat, x.flat);
  k::rope_forward<double>(y.ten(R, T, hd), tab);
  const auto hx = host(x.flat), hy = host(y.flat);
  double moved = 0;
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t)
      for (int i = 0; i < hd / 2; ++i) {
        const std::size_t a = (std::size_t(r) * T + t) * hd + 2 * i;
        if (t == 0) {
          CHECK(hy[a] == hx[a]);
          CHECK(hy[a + 1] == hx[a + 1]);
        }
        moved = test::worse(moved, test::abs_error(hy[a], hx[a]));
        CHECK(std::hypot(hy[a], hy[a + 1]) == Approx(std::hypot(hx[a], hx[a + 1])).epsilon(1e-13));
      }
  CHECK(std::isfinite(moved));
  CHECK(moved > 1e-3);  // later positions do turn
}

TEST_CASE("rope: q.k depends only on the relative position, across a zig-zag split", "[kernels][rope]") {
  // The same q at every token and the same k at every token: after rope the score of a
  // query at global position a and a key at b must be f(a - b). f comes from a whole
  // sequence; the zig-zag ranks' tokens (non-contiguous positions) must agree with it.
  const int seq = 16, hd = 8;
  auto scores = [&](const k::Positions& pos, std::vector<int>& global) {
    const int T = pos.local_seq;
    Tensor q = constant_rows(1, T, hd, 5), kk = constant_rows(1, T, hd, 6);
    const auto tab = table(pos, hd);
    k::rope_forward<double>(q.ten(1, T, hd), tab);
    k::rope_forward<double>(kk.ten(1, T, hd), tab);
    const auto hq = host(q.flat), hk = host(kk.flat);
    global.assign(std::size_t(T), 0);
    for (int t = 0; t < T; ++t) global[std::size_t(t)] = pos.global(t);
    std::vector<double> s(std::size_t(T) * T);
    for (int a = 0; a < T; ++a)
      for (int b = 0; b < T; ++b) {
        double d = 0;
        for (int j = 0; j < hd; ++j) d += hq[std::size_t(a) * hd + j] * hk[std::size_t(b) * hd + j];
        s[std::size_t(a) * T + b] = d;
      }
    return s;
  };
  std::vector<int> g;
  const std::vector<double> whole = scores(k::Positions(seq), g);
  // f(delta) from the first row and column of the whole sequence; every entry agrees.
  auto f = [&](int delta) { return delta >= 0 ? whole[std::size_t(delta) * seq] : whole[std::size_t(-delta)]; };
  for (int a = 0; a < seq; ++a)
    for (int b = 0; b < seq; ++b) CHECK(whole[std::size_t(a) * seq + b] == Approx(f(a - b)).margin(1e-12));
  CHECK(std::abs(f(1) - f(0)) > 1e-3);
  CHECK(std::abs(f(5) - f(-5)) > 1e-3);  // not symmetric: q and k differ
  const cp::Split split{2, true};
  for (int rank = 0; rank < 2; ++rank) {
    const k::Positions pos = split.positions(rank, seq);
    const std::vector<double> s = scores(pos, g);
    const int T = pos.local_seq;
    for (int a = 0; a < T; ++a)
      for (int b = 0; b < T; ++b)
        CHECK(s[std::size_t(a) * T + b] == Approx(f(g[std::size_t(a)] - g[std::size_t(b)])).margin(1e-12));
  }
}

TEST_CASE("rope: turning q and k while the heads are split and merged equals the reference", "[kernels][rope]") {
  // B = 2, T = 8 local tokens (rank 1 of a c = 2 zig-zag split of 16), 4 query heads over
  // 2 key/value heads of width 6.
  const int B = 2, seq = 16, H = 4, Hkv = 2, hd = 6;
  const cp::Split split{2, true};
  const k::Positions pos = split.positions(1, seq);
  const int T = pos.local_seq, W = (H + 2 * Hkv) * hd;
  const k::AttentionShape shape{B, T, H, hd, Hkv};
  const auto tab = table(pos, hd);
  Tensor qkv(std::int64_t(B) * T * W), q(std::int64_t(B) * H * T * hd), kk(std::int64_t(B) * Hkv * T * hd),
      v(std::int64_t(B) * Hkv * T * hd);
  test::fill_random(qkv.flat, 41);
  k::attention_split_heads<double>(q.ten(B * H, T, hd), kk.ten(B * Hkv, T, hd), v.ten(B * Hkv, T, hd),
                                   qkv.mat(B * T, W), shape, &tab);
  Tensor q0(q.flat.extent(0)), k0(kk.flat.extent(0)), v0(v.flat.extent(0));
  k::attention_split_heads<double>(q0.ten(B * H, T, hd), k0.ten(B * Hkv, T, hd), v0.ten(B * Hkv, T, hd),
                                   qkv.mat(B * T, W), shape);
  k::rope_forward<double>(q0.ten(B * H, T, hd), tab);
  k::rope_forward<double>(k0.ten(B * Hkv, T, hd), tab);
  auto same = [](const Tensor& a, const Tensor& b) {
    const auto ha = host(a.flat), hb = host(b.flat);
    double worst = 0;
    for (std::size_t i = 0; i < ha.size(); ++i) worst = test::worse(worst, test::abs_error(ha[i], hb[i]));
    return worst;
  };
  CHECK(same(q, q0) < 1e-15);
  CHECK(same(kk, k0) < 1e-15);
  CHECK(same(v, v0) == 0.0);
  // Something turned: the fused split differs from a plain one.
  Tensor plain(q.flat.extent(0)), pk(kk.flat.extent(0)), pv(v.flat.extent(0));
  k::attention_split_heads<double>(plain.ten(B * H, T, hd), pk.ten(B * Hkv, T, hd), pv.ten(B * Hkv, T, hd),
                                   qkv.mat(B * T, W), shape);
  CHECK(same(q, plain) > 1e-3);

  // The backward: merging dq, dk with the table equals turning them back first.
  Tensor dqkv(qkv.flat.extent(0)), ref(qkv.flat.extent(0));
  test::fill_random(q.flat, 42);
  test::fill_random(kk.flat, 43);
  test::fill_random(v.flat, 44);
  k::attention_merge_heads_qkv<double>(dqkv.mat(B * T, W), q.ten(B * H, T, hd), kk.ten(B * Hkv, T, hd),
                                       v.ten(B * Hkv, T, hd), shape, &tab);
  k::rope_backward<double>(q.ten(B * H, T, hd), tab);
  k::rope_backward<double>(kk.ten(B * Hkv, T, hd), tab);
  k::attention_merge_heads_qkv<double>(ref.mat(B * T, W), q.ten(B * H, T, hd), kk.ten(B * Hkv, T, hd),
                                       v.ten(B * Hkv, T, hd), shape);
  CHECK(same(dqkv, ref) < 1e-15);
}
