// SPDX-License-Identifier: BSD-3-Clause
// Blockwise attention at c = 1 (kernels/blockwise_attention.hpp, model.attention):
//   * in fp64, on head tensors, its forward and backward equal full attention's
//     (kernels/attention.hpp) to rounding and its gradients match finite differences,
//     on both product paths, with one tile and with three (the last one short), and
//     with key panels of one tile, of several (a short first panel, a masked last one
//     that starts before the tile), and of the whole row;
//   * in fp32, the tiny deck's model (and the same model at seq 160: three tiles) gives
//     the same loss and the same gradient with either core, within a stated bound;
//   * a blockwise model allocates no seq x seq buffer: its activations and work buffers
//     are smaller than the full model's by the probabilities and their gradient.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <string>

#include "fd_harness.hpp"
#include "grad_check.hpp"
#include "mini5d/core/deck.hpp"
#include "mini5d/kernels/attention.hpp"
#include "mini5d/kernels/blockwise_attention.hpp"
#include "mini5d/model/gpt.hpp"

using namespace mini5d;
using test::Tensor;
namespace k = mini5d::kernels;

namespace {
// Bounds: finite differences (grad_check.hpp), and the rounding of two summation orders.
constexpr double kFd = 1e-6, kRounding = 1e-12;

const k::GemmPath kPaths[] = {k::GemmPath::blas_loop, k::GemmPath::teams};

// q, k, v of BH (batch, head) matrices [T, hd] through the blockwise core in tiles of
// `block` rows against key panels of `panel` columns.
struct BlockwiseRig {
  int BH = 4, T = 11, hd = 5, block = 4, panel = 4;
  Tensor q{BH * T * hd}, kk{BH * T * hd}, v{BH * T * hd}, y{BH * T * hd}, lse{BH * T};
  k::BlockwiseWork<double> work;
  BlockwiseRig(int blk, int pnl) : block(blk), panel(pnl) {
    const int tile = k::blockwise_tile(T, block), cols = k::blockwise_panel(T, panel);
    work.s = Ten3<double>("s", BH, tile, cols);
    work.dp = Ten3<double>("dp", BH, tile, cols);
    work.l = Mat<double>("l", BH, T);
    test::fill_random(q.flat, 31);
    test::fill_random(kk.flat, 32);
    test::fill_random(v.flat, 33);
  }
  Ten3U<double> t(const Tensor& x, int last = 0) const { return x.ten(BH, T, last ? last : hd); }
  void forward() {
    k::blockwise_attention_forward<double>(t(y), lse.mat(BH, T), t(q), t(kk), t(v), work, block, panel);
  }
  void backward(Tensor& dq, Tensor& dk, Tensor& dv, const Tensor& dy) {
    k::blockwise_attention_backward<double>(t(dq), t(dk), t(dv), t(dy), t(y), lse.mat(BH, T), t(q), t(kk), t(v),
                                            work, block, panel);
  }
};

void check_against_full(int block, int panel) {
  for (const k::GemmPath path : kPaths) {
    const k::ScopedGemmPath forced(path);
    INFO("tile " << block << ", panel " << panel << ", products "
                 << (path == k::GemmPath::teams ? "teams" : "blas_loop"));
    BlockwiseRig a(block, panel);
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
    CHECK(test::scaled_difference(a.y.flat, y_ref.flat) < kRounding);
    a.backward(dq, dk, dv, R);
    CHECK(test::scaled_difference(dq.flat, dq_ref.flat) < kRounding);
    CHECK(test::scaled_difference(dk.flat, dk_ref.flat) < kRounding);
    CHECK(test::scaled_difference(dv.flat, dv_ref.flat) < kRounding);
    CHECK(test::grad_error(a.q.flat, dq.flat, loss) < kFd);
    CHECK(test::grad_error(a.kk.flat, dk.flat, loss) < kFd);
    CHECK(test::grad_error(a.v.flat, dv.flat, loss) < kFd);
  }
}
}  // namespace

TEST_CASE("blockwise attention equals full attention and matches finite differences", "[kernels][blockwise][grad]") {
  check_against_full(4, 4);   // tiles of 4, 4 and 3 rows, panels of one tile: full, diagonal, short
  // Panels of 5 keys, cut back from each tile's end: tile [4, 8) meets keys [0, 3) and
  // [3, 8) (masked, shift 1), tile [8, 11) meets [0, 1), [1, 6) and [6, 11) (shift 2).
  check_against_full(4, 5);
  check_against_full(4, k::kAttKeyPanel);          // one panel per tile: every key up to the diagonal
  check_against_full(k::kAttBlock, k::kAttKeyPanel);  // one tile of all 11 rows
}

TEST_CASE("blockwise attention refuses a key panel narrower than its query tile", "[kernels][blockwise]") {
  BlockwiseRig a(4, 4);
  a.panel = 3;
  CHECK_THROWS_AS(a.forward(), std::invalid_argument);
}

TEST_CASE("blockwise attention keeps the log-sum-exp of each query row", "[kernels][blockwise]") {
  BlockwiseRig a(4, 5);
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

namespace {
// The tiny deck's model (inputs/tiny.yaml) in fp32, its micro-batch of 16 sequences:
// loss and gradient with one core, from the same initial weights.
struct Result {
  double loss = 0;
  Vec<double> grads;
  std::int64_t activations = 0, workspace = 0;
};
Result tiny_step(const std::string& attention, int seq) {
  Deck deck = load_deck(std::string(MINI5D_SOURCE_DIR) + "/inputs/tiny.yaml",
                        {"model.attention=" + attention, "model.seq=" + std::to_string(seq)});
  const int B = deck.train.micro_batch, N = B * seq;
  model::Gpt<float> gpt(deck.model, B);
  gpt.init_params(deck.train.seed);
  const test::Batch batch = test::fixed_batch(N, deck.model.vocab);
  gpt.zero_grads();
  Result r;
  r.loss = gpt.forward(batch.in, batch.tg, 1.0f / float(N)) / N;
  gpt.backward();
  r.grads = Vec<double>("grads", gpt.grads.extent(0));
  const Vec<float> g = gpt.grads;
  const Vec<double> out = r.grads;
  Kokkos::parallel_for("mini5d::test::widen", Range(0, g.extent(0)), KOKKOS_LAMBDA(const int i) { out(i) = g(i); });
  r.activations = gpt.activation_bytes();
  r.workspace = gpt.workspace_bytes();
  return r;
}
}  // namespace

TEST_CASE("blockwise and full attention give the tiny deck's loss and gradient in fp32", "[model][blockwise]") {
  // fp32 rounding of two summation orders: the loss agrees to 1e-6 relative and the
  // gradient to 1e-5 of its largest entry (measured: 3.4e-9 and 5.9e-7 at seq 32, 3.9e-9
  // and 6.6e-7 at seq 160); a wrong tile or mask moves both by percents.
  for (const int seq : {32, 160}) {
    INFO("seq " << seq);
    const Result full = tiny_step("full", seq), blockwise = tiny_step("blockwise", seq);
    REQUIRE(std::isfinite(full.loss));
    CHECK(test::relative_to(blockwise.loss, full.loss, full.loss) < 1e-6);
    CHECK(test::scaled_difference(blockwise.grads, full.grads) < 1e-5);
    // What the model allocated: the full core's probabilities [B*H, T, T] (kept, per
    // block) and their gradient (work), against blockwise's log-sum-exps (kept) and
    // two [tile, panel] buffers and a running sum (work), in fp32.
    const std::int64_t BH = 16 * 4, T = seq, L = 2, tile = std::min<std::int64_t>(T, k::kAttBlock),
                       panel = std::min<std::int64_t>(T, k::kAttKeyPanel);
    CHECK(full.activations - blockwise.activations == L * 4 * (BH * T * T - BH * T));
    CHECK(full.workspace - blockwise.workspace == 4 * (BH * T * T - 2 * BH * tile * panel - BH * T));
  }
}
