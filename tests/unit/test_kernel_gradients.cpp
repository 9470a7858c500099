// SPDX-License-Identifier: BSD-3-Clause
// Finite-difference checks, in fp64, of every kernel's backward: each kernel's output
// is contracted with a fixed random tensor R (loss = sum(out * R)), so dL/dout = R is
// what the backward is fed, and every input and parameter gradient is compared with
// central differences of that loss. Bound: relative error < 1e-6 (see grad_check.hpp).
#include <catch2/catch.hpp>
#include <vector>

#include <cstdlib>

#include "grad_check.hpp"
#include "mini5d/kernels/math.hpp"
#include "mini5d/kernels/attention.hpp"
#include "mini5d/kernels/cross_entropy.hpp"
#include "mini5d/kernels/embedding.hpp"
#include "mini5d/kernels/gelu.hpp"
#include "mini5d/kernels/layernorm.hpp"
#include "mini5d/kernels/linear.hpp"

using namespace mini5d;
using test::Tensor;
using test::grad_error;
namespace k = mini5d::kernels;

constexpr double kBound = 1e-6;

TEST_CASE("linear backward matches finite differences", "[kernels][grad]") {
  const int N = 5, I = 4, O = 3;
  Tensor x(N * I), w(O * I), b(O), y(N * O), R(N * O), dx(N * I), dw(O * I), db(O), ones(N);
  test::fill_random(x.flat, 1);
  test::fill_random(w.flat, 2);
  test::fill_random(b.flat, 3);
  test::fill_random(R.flat, 4);
  Kokkos::deep_copy(ones.flat, 1.0);
  auto loss = [&] {
    k::linear_forward<double>(y.mat(N, O), x.mat(N, I), w.mat(O, I), b.vec());
    return test::dot(y.flat, R.flat);
  };
  k::linear_backward<double>(dx.mat(N, I), dw.mat(O, I), db.vec(), R.mat(N, O), x.mat(N, I),
                             w.mat(O, I), ones.vec());
  CHECK(grad_error(x.flat, dx.flat, loss) < kBound);
  CHECK(grad_error(w.flat, dw.flat, loss) < kBound);
  CHECK(grad_error(b.flat, db.flat, loss) < kBound);

  // Parameter gradients accumulate across calls (micro-batches add up).
  Tensor dw2(O * I), db2(O);
  Kokkos::deep_copy(dw2.flat, dw.flat);
  Kokkos::deep_copy(db2.flat, db.flat);
  k::linear_backward<double>(dx.mat(N, I), dw2.mat(O, I), db2.vec(), R.mat(N, O), x.mat(N, I),
                             w.mat(O, I), ones.vec());
  auto h1 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), dw.flat);
  auto h2 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), dw2.flat);
  for (int i = 0; i < O * I; ++i) CHECK(h2(i) == Approx(2 * h1(i)).epsilon(1e-12));
}

namespace {
// LayerNorm over N rows of C, the tensors drawn from seeds seed .. seed + 3 (x at scale
// 2); with `accumulate` the backward adds to dx (zero here) instead of writing it.
void check_layernorm(int N, int C, unsigned seed, bool accumulate) {
  Tensor x(N * C), w(C), b(C), y(N * C), mean(N), rstd(N), R(N * C), dx(N * C), dw(C), db(C);
  test::fill_random(x.flat, seed, 2.0);
  test::fill_random(w.flat, seed + 1);
  test::fill_random(b.flat, seed + 2);
  test::fill_random(R.flat, seed + 3);
  auto loss = [&] {
    k::layernorm_forward<double>(y.mat(N, C), mean.vec(), rstd.vec(), x.mat(N, C), w.vec(), b.vec());
    return test::dot(y.flat, R.flat);
  };
  loss();
  k::layernorm_backward<double>(dx.mat(N, C), dw.vec(), db.vec(), R.mat(N, C), x.mat(N, C), w.vec(),
                                mean.vec(), rstd.vec(), accumulate);
  CHECK(grad_error(x.flat, dx.flat, loss) < kBound);
  CHECK(grad_error(w.flat, dw.flat, loss) < kBound);
  CHECK(grad_error(b.flat, db.flat, loss) < kBound);
}
}  // namespace

TEST_CASE("layernorm backward matches finite differences", "[kernels][grad]") { check_layernorm(4, 6, 5, false); }

TEST_CASE("layernorm backward over several partial-sum blocks matches finite differences", "[kernels][grad]") {
  // 37 rows: two blocks of kLnRows = 32, the second partial; dx accumulates.
  check_layernorm(k::kLnRows + 5, 5, 31, true);
}

TEST_CASE("bias + gelu forward and gelu backward with the bias gradient match finite differences",
          "[kernels][grad]") {
  // 35 rows: two blocks of kGeluRows = 32 partial sums; 7 columns.
  const int N = k::kGeluRows + 3, C = 7;
  Tensor x(N * C), b(C), h(N * C), y(N * C), R(N * C), dx(N * C), db(C);
  test::fill_random(x.flat, 35, 2.0);
  test::fill_random(b.flat, 36);
  test::fill_random(R.flat, 37);
  auto loss = [&] {
    Kokkos::deep_copy(h.flat, x.flat);  // h = x, then h += b in place
    k::bias_gelu_forward<double>(y.mat(N, C), h.mat(N, C), b.vec());
    return test::dot(y.flat, R.flat);
  };
  loss();  // h holds x + b, as the model keeps it
  k::gelu_backward_bias<double>(dx.mat(N, C), db.vec(), R.mat(N, C), h.mat(N, C));
  CHECK(grad_error(x.flat, dx.flat, loss) < kBound);
  CHECK(grad_error(b.flat, db.flat, loss) < kBound);
}

TEST_CASE("gelu backward matches finite differences", "[kernels][grad]") {
  const int N = 3, C = 7;
  Tensor x(N * C), y(N * C), R(N * C), dx(N * C);
  test::fill_random(x.flat, 9, 2.0);
  test::fill_random(R.flat, 10);
  auto loss = [&] {
    k::gelu_forward<double>(y.mat(N, C), x.mat(N, C));
    return test::dot(y.flat, R.flat);
  };
  k::gelu_backward<double>(dx.mat(N, C), R.mat(N, C), x.mat(N, C));
  CHECK(grad_error(x.flat, dx.flat, loss) < kBound);
}

namespace {
// The split embedding kernels the model runs: the lookup (all vocabulary rows held here,
// from row 0) and the positions added after it, on the tokens `ids` (sequences of T) of
// a vocabulary of V rows of width D; the tensors drawn from seeds seed, seed + 1, seed + 2.
void check_embedding(int V, int D, int T, const std::vector<int>& ids, unsigned seed) {
  const int N = int(ids.size());
  Tensor wte(V * D), wpe(T * D), x(N * D), R(N * D), dwte(V * D), dwpe(T * D);
  Vec<int> tok("tokens", N);
  auto ht = Kokkos::create_mirror_view(tok);
  for (int i = 0; i < N; ++i) ht(i) = ids[std::size_t(i)];
  Kokkos::deep_copy(tok, ht);
  test::fill_random(wte.flat, seed);
  test::fill_random(wpe.flat, seed + 1);
  test::fill_random(R.flat, seed + 2);
  auto loss = [&] {
    k::embedding_lookup<double>(x.mat(N, D), tok, wte.mat(V, D), 0);
    k::add_positions<double>(x.mat(N, D), wpe.mat(T, D), T, 0);
    return test::dot(x.flat, R.flat);
  };
  k::embedding_lookup_backward<double>(dwte.mat(V, D), R.mat(N, D), tok, 0);
  k::add_positions_backward<double>(dwpe.mat(T, D), R.mat(N, D), T, 0);
  CHECK(grad_error(wte.flat, dwte.flat, loss) < kBound);
  CHECK(grad_error(wpe.flat, dwpe.flat, loss) < kBound);
}
}  // namespace

TEST_CASE("embedding backward matches finite differences", "[kernels][grad]") {
  // B = 2 sequences of T = 4; repeats: gradients must add.
  check_embedding(7, 3, 4, {3, 1, 3, 6, 0, 3, 1, 2}, 11);
}

TEST_CASE("embedding backward over several column blocks matches finite differences", "[kernels][grad]") {
  // kEmbCols + 3 columns: two column blocks, the second partial; repeated tokens add up.
  check_embedding(4, k::kEmbCols + 3, 3, {2, 0, 2, 3, 2, 1}, 41);
}

namespace {
// Full attention path from a fused qkv [B*T, 3D] to the merged output [B*T, D]. With a
// causal block smaller than T the products run block by block (the last one partial).
struct AttentionRig {
  k::AttentionShape s{2, 5, 2, 3};
  int block = k::kAttBlock;
  int N = s.batch * s.seq, D = s.d_model(), BH = s.batch * s.heads;
  Tensor qkv{N * 3 * D}, out{N * D}, q{BH * s.seq * s.head_dim}, kk{BH * s.seq * s.head_dim},
      v{BH * s.seq * s.head_dim}, y{BH * s.seq * s.head_dim}, p{BH * s.seq * s.seq};
  AttentionRig() = default;
  AttentionRig(k::AttentionShape shape, int blk)
      : s(shape), block(blk), N(s.batch * s.seq), D(s.d_model()), BH(s.batch * s.heads), qkv(N * 3 * D),
        out(N * D), q(BH * s.seq * s.head_dim), kk(BH * s.seq * s.head_dim), v(BH * s.seq * s.head_dim),
        y(BH * s.seq * s.head_dim), p(BH * s.seq * s.seq) {}
  Ten3U<double> t3(const Tensor& t, int last) const { return t.ten(BH, s.seq, last); }
  void forward() {
    k::attention_split_heads<double>(t3(q, s.head_dim), t3(kk, s.head_dim), t3(v, s.head_dim),
                                     qkv.mat(N, 3 * D), s);
    k::attention_forward<double>(t3(y, s.head_dim), t3(p, s.seq), t3(q, s.head_dim),
                                 t3(kk, s.head_dim), t3(v, s.head_dim), block);
    k::attention_merge_heads<double>(out.mat(N, D), t3(y, s.head_dim), s);
  }
};
}  // namespace

namespace {
void check_attention_gradient(AttentionRig& a) {
  const int hdn = a.BH * a.s.seq * a.s.head_dim;
  Tensor R(a.N * a.D), dy(hdn), dq(hdn), dk(hdn), dv(hdn), dp(a.BH * a.s.seq * a.s.seq), dqkv(a.N * 3 * a.D);
  test::fill_random(a.qkv.flat, 14);
  test::fill_random(R.flat, 15);
  auto loss = [&] {
    a.forward();
    return test::dot(a.out.flat, R.flat);
  };
  loss();
  const int hd = a.s.head_dim, T = a.s.seq;
  k::attention_split_heads_grad<double>(a.t3(dy, hd), R.mat(a.N, a.D), a.s);
  k::attention_backward<double>(a.t3(dq, hd), a.t3(dk, hd), a.t3(dv, hd), a.t3(dp, T), a.t3(dy, hd),
                                a.t3(a.p, T), a.t3(a.q, hd), a.t3(a.kk, hd), a.t3(a.v, hd), a.block);
  k::attention_merge_heads_qkv<double>(dqkv.mat(a.N, 3 * a.D), a.t3(dq, hd), a.t3(dk, hd), a.t3(dv, hd), a.s);
  CHECK(grad_error(a.qkv.flat, dqkv.flat, loss) < kBound);
}
}  // namespace

TEST_CASE("causal attention backward matches finite differences", "[kernels][grad]") {
  AttentionRig a;
  check_attention_gradient(a);
}

TEST_CASE("causal attention backward with skipped causal blocks matches finite differences", "[kernels][grad]") {
  // 11 queries in blocks of 4: three blocks, the last partial; 3 heads of 5.
  AttentionRig a({2, 11, 3, 5}, 4);
  check_attention_gradient(a);
}

TEST_CASE("causal attention: skipping causal blocks changes nothing", "[kernels][mask]") {
  // The same inputs through one block (the whole T) and through blocks of 3 give the
  // same output to rounding: the skipped blocks held only masked scores.
  AttentionRig whole({2, 10, 2, 4}, 64), blocked({2, 10, 2, 4}, 3);
  test::fill_random(whole.qkv.flat, 21);
  Kokkos::deep_copy(blocked.qkv.flat, whole.qkv.flat);
  whole.forward();
  blocked.forward();
  auto a = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), whole.out.flat);
  auto b = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), blocked.out.flat);
  double worst = 0;
  for (std::size_t i = 0; i < a.extent(0); ++i) worst = test::worse(worst, test::abs_error(a(i), b(i)));
  CHECK(worst < 1e-13);
}

TEST_CASE("causal attention: no position sees the future", "[kernels][mask]") {
  AttentionRig a;
  test::fill_random(a.qkv.flat, 16);
  a.forward();
  // Probabilities: rows sum to one, exact zeros above the diagonal.
  auto hp = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a.p.flat);
  const int T = a.s.seq;
  for (int bh = 0; bh < a.BH; ++bh)
    for (int t = 0; t < T; ++t) {
      double sum = 0;
      for (int j = 0; j < T; ++j) {
        const double pv = hp((bh * T + t) * T + j);
        if (j > t) CHECK(pv == 0.0);
        sum += pv;
      }
      CHECK(sum == Approx(1.0).epsilon(1e-12));
    }
  // Changing every token at positions > 2 leaves the outputs at positions <= 2
  // bit-identical.
  // Explicit host copies: a mirror of a host view would alias the data.
  Kokkos::View<double*, Kokkos::HostSpace> before("before", a.out.flat.extent(0)),
      after("after", a.out.flat.extent(0)), hq("hq", a.qkv.flat.extent(0));
  Kokkos::deep_copy(before, a.out.flat);
  Kokkos::deep_copy(hq, a.qkv.flat);
  for (int b = 0; b < a.s.batch; ++b)
    for (int t = 3; t < T; ++t)
      for (int c = 0; c < 3 * a.D; ++c) hq(((b * T) + t) * 3 * a.D + c) += 1.5;
  Kokkos::deep_copy(a.qkv.flat, hq);
  a.forward();
  Kokkos::deep_copy(after, a.out.flat);
  int same = 0, changed = 0;
  for (int b = 0; b < a.s.batch; ++b)
    for (int t = 0; t < T; ++t)
      for (int c = 0; c < a.D; ++c) {
        const int i = (b * T + t) * a.D + c;
        if (t <= 2) same += before(i) == after(i);
        else changed += before(i) != after(i);
      }
  CHECK(same == a.s.batch * 3 * a.D);
  CHECK(changed == a.s.batch * (T - 3) * a.D);
}

TEST_CASE("softmax cross-entropy backward matches finite differences", "[kernels][grad]") {
  const int N = 6, V = 5;
  const double scale = 1.0 / N;
  Tensor logits(N * V), work(N * V);
  Vec<int> tgt("targets", N);
  auto ht = Kokkos::create_mirror_view(tgt);
  for (int i = 0; i < N; ++i) ht(i) = (3 * i + 1) % V;
  Kokkos::deep_copy(tgt, ht);
  test::fill_random(logits.flat, 17, 3.0);
  auto loss = [&] {
    Kokkos::deep_copy(work.flat, logits.flat);
    return scale * k::cross_entropy_forward_backward<double>(work.mat(N, V), tgt, scale);
  };
  loss();  // work now holds the analytic gradient
  Tensor grad(N * V);
  Kokkos::deep_copy(grad.flat, work.flat);
  CHECK(grad_error(logits.flat, grad.flat, loss) < kBound);

  // The loss itself against a direct evaluation.
  auto hl = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), logits.flat);
  double ref = 0;
  for (int r = 0; r < N; ++r) {
    double z = 0;
    for (int c = 0; c < V; ++c) z += std::exp(hl(r * V + c));
    ref += std::log(z) - hl(r * V + ht(r));
  }
  CHECK(loss() == Approx(ref * scale).epsilon(1e-12));
}

TEST_CASE("fp32 fast exp and tanh are accurate to about one ulp", "[kernels][math]") {
  double worst_exp = 0, worst_tanh = 0;
  for (int i = -87000; i <= 88000; ++i) {
    const float x = float(i) * 1e-3f;
    if (x < -87.0f || x > 88.0f) continue;  // outside the clamp range it saturates by design
    const double ref = std::exp(double(x));
    worst_exp = test::worse(worst_exp, test::relative_to(kmath::exp_fast(x), ref, ref));
  }
  for (int i = -20000; i <= 20000; ++i) {
    const float x = float(i) * 1e-3f;
    // Absolute error: tanh's cancellation near 0 is absolute, not relative.
    worst_tanh = test::worse(worst_tanh, test::abs_error(k::fast_tanh(x), std::tanh(double(x))));
  }
  INFO("exp relative error " << worst_exp << ", tanh absolute error " << worst_tanh);
  CHECK(worst_exp < 3e-7);
  CHECK(worst_tanh < 3e-7);
  CHECK(kmath::exp_fast(-200.0f) >= 0.0f);
  CHECK(kmath::exp_fast(-200.0f) < 1e-37f);
  CHECK(kmath::exp_fast(0.0f) == Approx(1.0f).epsilon(1e-7));
}

TEST_CASE("the team kernels run at the team size the test asked for", "[kernels][teams]") {
  // MINI5D_TEST_TEAM_SIZE (tests/support/main.cpp) fixes it; otherwise Kokkos chooses.
  int seen = 0;
  Kokkos::parallel_reduce(
      "mini5d::test::team_size", teams(4),
      KOKKOS_LAMBDA(const TeamMember& t, int& most) {
        Kokkos::single(Kokkos::PerTeam(t), [&]() {
          most = t.team_size() > most ? t.team_size() : most;  // nan-safe: ints
        });
      },
      Kokkos::Max<int>(seen));
  const char* asked = std::getenv("MINI5D_TEST_TEAM_SIZE");
  INFO("asked " << (asked ? asked : "(nothing)") << ", ran " << seen << " threads per team on " << ExecSpace::name());
  if (asked && *asked)
    CHECK(seen == std::atoi(asked));
  else
    CHECK(seen >= 1);
}
