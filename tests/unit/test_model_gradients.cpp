// SPDX-License-Identifier: BSD-3-Clause
// Finite-difference checks, in fp64, of the composed model: a one-block model (every
// tensor of a block plus the embeddings and head around it) and a two-block model
// (gradients crossing a block boundary through the residual stream), with the default
// blockwise attention core, and the one-block model again with full attention; the
// two-block model with llama-tiny's block parts (RMSNorm, SwiGLU, no biases), and with
// each part alone; with rotary positions (model.positions=rope); grouped-query attention
// (model.kv_heads) with 4 query heads sharing 2 and 1 key/value heads, blockwise and
// full; with the LM head tied to the token embedding (model.tie_embeddings: one wte
// whose gradient sums the head's and the lookup's), with a padded vocabulary row too.
// Every parameter is checked, tensor by tensor. Bound: relative error < 1e-6 per
// tensor.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "compare.hpp"
#include "fd_harness.hpp"
#include "mini5d/model/gpt.hpp"

using namespace mini5d;

namespace {
// Many parameter gradients are ~1e-4 of a loss ~2.4, so the rounding error of a central
// difference, eps * loss / h, is relatively larger than in the kernel tests; h = 1e-5
// keeps it near 1e-7 while the O(h^2) truncation stays far below.
constexpr double kStep = 1e-5;
// norm, mlp, bias: the block's parts (model.norm, model.mlp, model.bias); positions:
// model.positions (rope: no position table, q and k turned; theta small so that the
// few positions turn by sizeable angles); heads, kv_heads: 0 keeps fd_model's 2 heads
// (multi-head attention).
void check_model(int layers, const char* attention = "blockwise", const char* norm = "layernorm",
                 const char* mlp = "gelu", const char* bias = "true", const char* positions = "learned",
                 int heads = 0, int kv_heads = 0, const char* tie = "false", int vocab_pad_to = 1) {
  ModelConfig m = test::fd_model(11, 5, 12, layers);
  // The parts in the deck's words, read as the deck reads them (rules/deck_choices.hpp).
  REQUIRE((parse_choice(tie, m.tie_embeddings) && parse_choice(attention, m.attention) && parse_choice(norm, m.norm) &&
           parse_choice(mlp, m.mlp) && parse_choice(bias, m.bias) && parse_choice(positions, m.positions)));
  m.vocab_pad_to = vocab_pad_to;
  if (heads > 0) m.heads = heads;
  m.kv_heads = kv_heads;
  m.rope_theta = 7;
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
TEST_CASE("one block with full attention: every parameter gradient", "[model][grad]") { check_model(1, "full"); }
TEST_CASE("whole two-block model with RMSNorm, SwiGLU and no biases: every parameter gradient", "[model][grad][llama]") {
  check_model(2, "blockwise", "rmsnorm", "swiglu", "false");
}
TEST_CASE("two-block Llama model with rotary positions: every parameter gradient", "[model][grad][llama][rope]") {
  check_model(2, "blockwise", "rmsnorm", "swiglu", "false", "rope");
  check_model(1, "full", "layernorm", "gelu", "true", "rope");
}
TEST_CASE("one block with each of RMSNorm, SwiGLU, no biases alone: every parameter gradient",
          "[model][grad][llama]") {
  check_model(1, "blockwise", "rmsnorm");
  check_model(1, "blockwise", "layernorm", "swiglu");
  check_model(1, "blockwise", "layernorm", "gelu", "false");
}

TEST_CASE("grouped-query attention (4 query heads, 2 and 1 key/value heads): every parameter gradient",
          "[model][grad][gqa]") {
  check_model(2, "blockwise", "rmsnorm", "swiglu", "false", "rope", 4, 2);
  check_model(1, "blockwise", "layernorm", "gelu", "true", "learned", 4, 1);
  check_model(1, "full", "layernorm", "gelu", "true", "learned", 4, 2);
}

TEST_CASE("tied embeddings: every parameter gradient, wte's the sum of the head's and the lookup's",
          "[model][grad][tie]") {
  check_model(1, "blockwise", "layernorm", "gelu", "true", "learned", 0, 0, "true");
  // A padded row (11 -> 12): never a target, no gradient from either path.
  check_model(2, "blockwise", "rmsnorm", "swiglu", "false", "rope", 0, 0, "true", 4);
}

// The tied model's wte gradient is the untied model's wte gradient plus its LM head's,
// when the head starts equal to wte: the two paths, added in one tensor. Exact up to the
// order of the additions.
TEST_CASE("tied embeddings: wte's gradient equals the untied embedding's plus the head's", "[model][grad][tie]") {
  ModelConfig m = test::fd_model(11, 5, 12, 2);
  m.vocab_pad_to = 4;
  ModelConfig tied = m;
  tied.tie_embeddings = true;
  const int B = 2, N = B * m.seq;
  const test::Batch batch = test::fixed_batch(N, m.vocab);
  model::Gpt<double> a(m, B), b(tied, B);
  REQUIRE(!b.layout().find("lm_head.weight"));
  REQUIRE(b.layout().total() + a.layout().at("wte").size() == a.layout().total());
  a.init_params(42);
  b.init_params(42);
  const auto& wa = a.layout().at("wte");
  const auto& ha = a.layout().at("lm_head.weight");
  auto slice = [](Vec<double> v, const model::TensorSpec& t) {
    return Kokkos::subview(v, std::make_pair(t.offset, t.offset + t.size()));
  };
  Kokkos::deep_copy(slice(a.params, ha), slice(a.params, wa));  // the untied head starts as wte
  // Every tensor but the head: the same values in both models (same names, same order).
  for (const auto& t : b.layout().tensors()) Kokkos::deep_copy(slice(b.params, t), slice(a.params, a.layout().at(t.name)));
  double loss[2];
  int k = 0;
  for (model::Gpt<double>* g : {&a, &b}) {
    g->zero_grads();
    loss[k++] = g->forward(batch.in, batch.tg, 1.0 / N);
    g->backward();
  }
  CHECK(loss[0] == Approx(loss[1]).epsilon(1e-14));
  const auto ga = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a.grads);
  const auto gb = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), b.grads);
  const auto& wb = b.layout().at("wte");
  double worst = 0, scale = 0;
  for (std::int64_t i = 0; i < wa.size(); ++i) {
    const double want = ga(wa.offset + i) + ga(ha.offset + i);
    worst = test::worse(worst, test::abs_error(gb(wb.offset + i), want));
    scale = test::worse(scale, std::fabs(want));
  }
  INFO("worst difference " << worst << " of gradients up to " << scale);
  CHECK(scale > 0);
  CHECK(worst <= 1e-14 * scale);
  // The padded row (row 11) has no gradient in either model.
  for (std::int64_t c = 0; c < m.d_model; ++c) CHECK(gb(wb.offset + 11 * m.d_model + c) == 0.0);
}

// The embedding's backward reads the forward's token ids again. A caller that passes a
// temporary (as a test or a new driver easily does) must still get the right gradient:
// the model holds a reference until the backward, then lets it go. Without it, the
// freed ids are overwritten by the next allocation of the same size (filled here with
// other ids) and the embedding gradient lands on the wrong rows.
TEST_CASE("the model holds its token ids from the forward to the backward", "[model][grad]") {
  const ModelConfig m = test::fd_model(11, 5, 12, 1);
  const int B = 2, N = B * m.seq;
  const test::HostTokens tokens = test::fixed_tokens(N, m.vocab);
  const double scale = 1.0 / N;
  auto gradients = [&](bool temporary) {
    model::Gpt<double> gpt(m, B);
    gpt.init_params(42);
    gpt.zero_grads();
    const Vec<int> held = test::to_device(tokens.in);
    if (temporary) {
      gpt.forward(test::to_device(tokens.in), test::to_device(tokens.tg), scale);
    } else {
      gpt.forward(held, test::to_device(tokens.tg), scale);
      CHECK(held.use_count() == 2);  // the caller's and the model's
    }
    std::vector<int> other(tokens.in.size());
    for (std::size_t i = 0; i < other.size(); ++i) other[i] = m.vocab - 1 - tokens.in[i];
    const Vec<int> reused = test::to_device(other);  // may take a freed buffer's place
    gpt.backward();
    if (!temporary) CHECK(held.use_count() == 1);  // released by the backward
    const auto g = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), gpt.grads);
    return std::vector<double>(g.data(), g.data() + g.extent(0));
  };
  const std::vector<double> held = gradients(false), temporary = gradients(true);
  REQUIRE(held.size() == temporary.size());
  double worst = 0;
  for (std::size_t i = 0; i < held.size(); ++i) worst = test::worse(worst, std::abs(held[i] - temporary[i]));
  CHECK(worst == 0);
}
