// SPDX-License-Identifier: BSD-3-Clause
// Finite-difference checks, in fp64, of the composed model: a one-block model (every
// tensor of a block plus the embeddings and head around it) and a two-block model
// (gradients crossing a block boundary through the residual stream). Every parameter
// is checked, tensor by tensor. Bound: relative error < 1e-6 per tensor.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "fd_harness.hpp"
#include "mini5d/model/gpt.hpp"

using namespace mini5d;

namespace {
// Many parameter gradients are ~1e-4 of a loss ~2.4, so the rounding error of a central
// difference, eps * loss / h, is relatively larger than in the kernel tests; h = 1e-5
// keeps it near 1e-7 while the O(h^2) truncation stays far below.
constexpr double kStep = 1e-5;
void check_model(int layers) {
  const ModelConfig m = test::fd_model(11, 5, 12, layers);
  const int B = 2, N = B * m.seq;
  model::Gpt<double> gpt(m, B);
  gpt.init_params(42);
  test::perturb(gpt.params, 99, 0.1);
  const test::Batch batch = test::fixed_batch(N, m.vocab);
  const double scale = 1.0 / N;
  gpt.zero_grads();
  gpt.forward(batch.in, batch.tg, scale);
  gpt.backward();
  auto loss = [&] { return scale * gpt.forward(batch.in, batch.tg, scale); };

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
