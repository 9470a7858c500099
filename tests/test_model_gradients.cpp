// SPDX-License-Identifier: BSD-3-Clause
// Finite-difference checks, in fp64, of the composed model: a one-block model (every
// tensor of a block plus the embeddings and head around it) and a two-block model
// (gradients crossing a block boundary through the residual stream). Every parameter
// is checked, tensor by tensor. Bound: relative error < 1e-6 per tensor.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "grad_check.hpp"
#include "mini5d/model/gpt.hpp"

using namespace mini5d;

namespace {
// Many parameter gradients are ~1e-4 of a loss ~2.4, so the rounding error of a central
// difference, eps * loss / h, is relatively larger than in the kernel tests; h = 1e-5
// keeps it near 1e-7 while the O(h^2) truncation stays far below.
constexpr double kStep = 1e-5;
void check_model(int layers) {
  ModelConfig m;
  m.vocab = 11;
  m.d_model = 8;
  m.layers = layers;
  m.heads = 2;
  m.seq = 5;
  m.ffn = 12;
  const int B = 2, N = B * m.seq;
  model::Gpt<double> gpt(m, B);
  gpt.init_params(42);
  // Perturb all parameters (biases and LayerNorm gains too) so no gradient is
  // trivially zero or one.
  Vec<double> noise("noise", gpt.params.extent(0));
  test::fill_random(noise, 99, 0.1);
  auto params = gpt.params;
  Kokkos::parallel_for("mini5d::test::perturb", Range(0, noise.extent(0)),
                       KOKKOS_LAMBDA(const int i) { params(i) += noise(i); });
  Vec<int> in("in", N), tg("tg", N);
  auto hi = Kokkos::create_mirror_view(in);
  auto ht = Kokkos::create_mirror_view(tg);
  for (int i = 0; i < N; ++i) {
    hi(i) = (7 * i + 3) % m.vocab;
    ht(i) = (5 * i + 1) % m.vocab;
  }
  Kokkos::deep_copy(in, hi);
  Kokkos::deep_copy(tg, ht);
  const double scale = 1.0 / N;
  gpt.zero_grads();
  gpt.forward(in, tg, scale);
  gpt.backward();
  auto loss = [&] { return scale * gpt.forward(in, tg, scale); };

  for (const auto& t : gpt.layout().tensors()) {
    // Check each tensor through a slice of the flat buffers.
    Vec<double> p("p", t.size()), g("g", t.size());
    auto ps = Kokkos::subview(gpt.params, std::make_pair(t.offset, t.offset + t.size()));
    auto gs = Kokkos::subview(gpt.grads, std::make_pair(t.offset, t.offset + t.size()));
    Kokkos::deep_copy(g, gs);
    Kokkos::deep_copy(p, ps);
    auto loss_t = [&] {
      Kokkos::deep_copy(ps, p);
      return loss();
    };
    const double err = test::grad_error(p, g, loss_t, kStep);
    Kokkos::deep_copy(ps, p);  // grad_error restored p; put it back into the model
    INFO("tensor " << t.name << " relative error " << err);
    CHECK(err < 1e-6);
  }
}
}  // namespace

TEST_CASE("one transformer block: every parameter gradient", "[model][grad]") { check_model(1); }
TEST_CASE("whole two-block model: every parameter gradient", "[model][grad]") { check_model(2); }
