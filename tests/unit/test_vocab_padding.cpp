// SPDX-License-Identifier: BSD-3-Clause
// Vocabulary padding (rules/vocab_padding.hpp, docs/parallelism.md): the rule; the two
// loss kernels ignore padding columns (same loss as without them, zero gradient); and a
// padded model at t = 1 starts from the unpadded one's parameter checksum (the padding
// rows are not in it) and trains as it does, to rounding.
#include <catch2/catch.hpp>
#include <cmath>

#include "compare.hpp"
#include "grad_check.hpp"
#include "input_error.hpp"
#include "mini5d/core/deck.hpp"
#include "mini5d/kernels/cross_entropy.hpp"
#include "mini5d/kernels/vocab_cross_entropy.hpp"
#include "mini5d/rules/vocab_padding.hpp"
#include "mini5d/train/param_checksum.hpp"
#include "mini5d/train/trainer.hpp"

using namespace mini5d;
using test::Tensor;
namespace k = mini5d::kernels;

TEST_CASE("padding rule: a multiple of vocab_pad_to x t, 0 meaning 128 x t", "[vocab]") {
  CHECK(padded_vocab(257, 1, 1) == 257);  // the default pads only for t
  CHECK(padded_vocab(257, 1, 2) == 258);
  CHECK(padded_vocab(257, 1, 4) == 260);
  CHECK(padded_vocab(257, 0, 1) == 384);  // Megatron's 128
  CHECK(padded_vocab(257, 0, 4) == 512);
  CHECK(padded_vocab(257, 64, 2) == 384);
  CHECK(padded_vocab(50257, 0, 1) == 50304);  // GPT-2's published padded size
  CHECK(padded_vocab(50257, 0, 8) == 51200);
  CHECK(padded_vocab(50257, 1, 8) == 50264);
  CHECK(padded_vocab(16, 1, 4) == 16);  // today's decks: t divides vocab, no padding
  CHECK(padded_vocab(4096, 1, 8) == 4096);
}

TEST_CASE("deck: vocab_pad_to defaults to 1 and is range-checked", "[vocab][deck]") {
  CHECK(parse_deck("", "t.yaml").model.vocab_pad_to == 1);
  CHECK(parse_deck("model:\n  vocab_pad_to: 0\n", "t.yaml").model.vocab_pad_to == 0);
  const std::string e = test::input_error([] { parse_deck("model:\n  vocab_pad_to: -1\n", "t.yaml"); });
  CHECK_THAT(e, Catch::Contains("t.yaml:2: model.vocab_pad_to"));
}

namespace {
// Logits [N, V + pad] whose padding columns hold large values: the loss and gradient of
// the model's V columns must not see them.
struct PaddedCase {
  static constexpr int N = 6, V = 5, pad = 3, W = V + pad;
  Tensor full{N * W}, plain{N * V};
  Vec<int> tgt{"targets", N};
  PaddedCase() {
    auto ht = Kokkos::create_mirror_view(tgt);
    for (int i = 0; i < N; ++i) ht(i) = (3 * i + 1) % V;
    Kokkos::deep_copy(tgt, ht);
    test::fill_random(plain.flat, 17, 3.0);
    auto hp = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), plain.flat);
    auto hf = Kokkos::create_mirror_view(full.flat);
    for (int r = 0; r < N; ++r)
      for (int c = 0; c < W; ++c) hf(r * W + c) = c < V ? hp(r * V + c) : 50.0 + c;
    Kokkos::deep_copy(full.flat, hf);
  }
  // The largest difference between the two gradients over the model's columns, and the
  // largest padding gradient; +inf where a value is not finite (compare.hpp).
  void compare(double& model_cols, double& padding) const {
    auto hp = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), plain.flat);
    auto hf = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), full.flat);
    model_cols = padding = 0;
    for (int r = 0; r < N; ++r)
      for (int c = 0; c < W; ++c) {
        if (c < V) model_cols = test::worse(model_cols, test::abs_error(hf(r * W + c), hp(r * V + c)));
        else padding = test::worse(padding, test::abs_error(hf(r * W + c), 0.0));
      }
  }
};
}  // namespace

TEST_CASE("the fused loss leaves padding columns out of the softmax", "[vocab][kernels]") {
  PaddedCase p;
  const double scale = 1.0 / p.N;
  const double want = k::cross_entropy_forward_backward<double>(p.plain.mat(p.N, p.V), p.tgt, scale);
  const double got = k::cross_entropy_forward_backward<double>(p.full.mat(p.N, p.W), p.tgt, scale, p.V);
  CHECK(got == Approx(want).epsilon(1e-14));
  double model_cols = 0, padding = 0;
  p.compare(model_cols, padding);
  CHECK(model_cols < 1e-15);
  CHECK(padding == 0);
}

TEST_CASE("the vocab-parallel passes leave padding columns out, and a rank of padding only", "[vocab][kernels]") {
  // One part (the collectives are identities): the rank's first V columns are the model's.
  PaddedCase p;
  const double scale = 1.0 / p.N;
  const double want = k::cross_entropy_forward_backward<double>(p.plain.mat(p.N, p.V), p.tgt, scale);
  Vec<double> row_max("row_max", p.N), sums("sums", 2 * p.N);
  k::vocab_ce_local_max<double>(row_max, p.full.mat(p.N, p.W), p.V);
  k::vocab_ce_local_sums<double>(sums, row_max, p.full.mat(p.N, p.W), row_max, 1, p.tgt, 0, p.V);
  const double got = k::vocab_ce_grad<double>(p.full.mat(p.N, p.W), sums, row_max, p.tgt, 0, p.V, scale);
  CHECK(got == Approx(want).epsilon(1e-12));
  double model_cols = 0, padding = 0;
  p.compare(model_cols, padding);
  CHECK(model_cols < 1e-14);
  CHECK(padding == 0);
  // A rank holding padding only: the lowest maximum, no sum, no target, zero gradient
  // (given the group's sums: 1 here, as another rank's would be).
  Tensor only(p.N * 4);
  Kokkos::deep_copy(only.flat, 7.0);
  Vec<double> all_max("all_max", 2 * p.N);
  k::vocab_ce_local_max<double>(row_max, only.mat(p.N, 4), 0);
  auto hm = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), row_max);
  CHECK(hm(0) == std::numeric_limits<double>::lowest());
  Kokkos::deep_copy(all_max, 1.0);
  Vec<int> far("targets", p.N);
  Kokkos::deep_copy(far, 0);  // the target lies on another rank (vocab_begin 100)
  k::vocab_ce_local_sums<double>(sums, row_max, only.mat(p.N, 4), all_max, 2, far, 100, 0);
  auto hs = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), sums);
  Vec<double> group_sums("group_sums", 2 * p.N);
  Kokkos::deep_copy(group_sums, 1.0);
  k::vocab_ce_grad<double>(only.mat(p.N, 4), group_sums, row_max, far, 100, 0, scale);
  auto ho = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), only.flat);
  double worst = 0;
  for (int i = 0; i < 2 * p.N; ++i) worst = test::worse(worst, test::abs_error(hs(i), 0.0));
  for (int i = 0; i < p.N * 4; ++i) worst = test::worse(worst, test::abs_error(ho(i), 0.0));
  CHECK(worst == 0);
}

TEST_CASE("a padded model at t = 1 trains as the unpadded one, with the same checksum", "[vocab][train]") {
  // vocab 257: 257 rows as it is (vocab_pad_to 1), 384 with Megatron's 128, 260 with 5.
  // The initial weights are bit-identical (same elements, padding left out). Training
  // is not: the BLAS blocks the LM head's products over 257 or 384 rows differently, so
  // the runs differ by rounding, as two layouts do; they are held to the loss bound
  // asked of padding (1e-6) and to the layout-invariance bounds on the checksum
  // (tests/mpi/invariance.hpp: sum of squares 1e-5, sum 1e-2 of the L2 norm, loose for
  // the biases whose gradient is rounding noise).
  const std::string tiny = std::string(MINI5D_SOURCE_DIR) + "/inputs/tiny.yaml";
  const std::vector<std::string> base = {"model.vocab=257", "train.steps=8", "train.weight_decay=0.1"};
  auto with = [&](const std::string& pad) {
    auto o = base;
    o.push_back("model.vocab_pad_to=" + pad);
    return load_deck(tiny, o);
  };
  train::Trainer plain(with("1"));
  REQUIRE(plain.model().layout().at("wte").shape[0] == 257);
  const auto initial = train::parameter_checksums(plain);
  plain.run();
  const auto want = train::parameter_checksums(plain);
  for (const auto& [pad, rows] : {std::pair{"0", 384}, std::pair{"5", 260}}) {
    train::Trainer padded(with(pad));
    CHECK(padded.model().layout().at("lm_head.weight").shape[0] == rows);
    const auto start = train::parameter_checksums(padded);
    REQUIRE(start.size() == initial.size());
    for (const auto& [name, c] : initial) {
      INFO(name);
      CHECK(start.at(name).elements == c.elements);  // the padding rows are not counted
      CHECK(start.at(name).sum == c.sum);
      CHECK(start.at(name).sum_sq == c.sum_sq);
    }
    padded.run();
    INFO("vocab_pad_to=" << pad);
    REQUIRE(padded.record().history.size() == plain.record().history.size());
    double worst = 0, norm = 0;
    for (std::size_t i = 0; i < plain.record().history.size(); ++i) {
      const double a = plain.record().history[i].loss, b = padded.record().history[i].loss;
      const double ga = plain.record().history[i].grad_norm, gb = padded.record().history[i].grad_norm;
      worst = test::worse(worst, test::relative_to(b, a, a));
      norm = test::worse(norm, test::relative_to(gb, ga, ga));
    }
    CHECK(worst <= 1e-6);
    CHECK(norm <= 1e-5);
    const auto got = train::parameter_checksums(padded);
    REQUIRE(got.size() == want.size());
    double sum = 0, sum_sq = 0;
    for (const auto& [name, c] : want) {
      INFO(name);
      REQUIRE(got.count(name));
      CHECK(got.at(name).elements == c.elements);
      sum_sq = test::worse(sum_sq, test::relative_to(got.at(name).sum_sq, c.sum_sq, c.sum_sq));
      sum = test::worse(sum, test::relative_to(got.at(name).sum, c.sum, std::sqrt(c.sum_sq)));
    }
    CHECK(sum_sq <= 1e-5);
    CHECK(sum <= 1e-2);
    std::printf("vocab 257 padded to %d at t = 1: worst relative loss difference %.3g, grad norm %.3g, "
                "checksum sum %.3g, sum of squares %.3g\n", rows, worst, norm, sum, sum_sq);
  }
}
