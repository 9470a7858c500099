// SPDX-License-Identifier: BSD-3-Clause
// The whole model in bf16 (Gpt<bf16>: bf16 weights and activations, fp32 statistics,
// fp32 main gradients) against the same model in fp64 and fp32, on identical weights:
// every weight is a bf16 value, so the three differ only by the rounding of what the
// bf16 model stores. GPT-2's block (LayerNorm, GELU, biases, learned positions),
// Llama's (RMSNorm, SwiGLU, no biases, rotary positions, grouped queries), and GPT-2's
// with a mixture of experts in every block (4 experts, top-2; the router in fp32).
//
// Bounds. Each bf16 store rounds to nearest with unit roundoff u = 2^-8. To first order a
// relative error of u per stored tensor adds along a path, so an output that has passed
// through k stores is within k * u of fp64 when each stage is well conditioned. Counted
// for this model (kernels that store one bf16 tensor each): the embedding 2 (lookup,
// positions), per block 11 in the forward (ln1, qkv, q/k/v split, y, attention
// projection, residual, ln2, fc, activation, MLP projection, residual) and 10 in the
// backward (the gradients of the same tensors but the embedding's), the head 3 (lnf,
// logits, dlogits) and 2 back (dlnf, dres). The loss sees the forward stores, each
// parameter gradient at most all of them:
//   loss:     |L16 - L64| / L64          <= (5 + 11 layers) u
//   gradient: ||g16 - g64|| / ||g64||     <= (7 + 21 layers) u   per tensor
// A mixture of experts stores one more tensor in the forward (the combined rows; the
// dispatch only copies) and three more in the backward (the combine's row gradients,
// their sum per token, the router's input gradient added to it): 12 and 13 per block,
// so (5 + 12 layers) u and (7 + 25 layers) u. The comparison needs the same routing in
// both models, which is checked: a token whose top two router probabilities lay within
// the bf16 rounding of its input would pick another expert.
// Both are checked the other way too: the bf16 error must exceed u / 16 on the loss or
// on some gradient (a model that silently computed in fp32 would be near 2^-24), and the
// fp32 model on the same weights must lie within 1e-4 of fp64 (its own k * 2^-24, with
// the products' K-term sums).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <type_traits>
#include <vector>

#include "compare.hpp"
#include "fd_harness.hpp"
#include "mini5d/kernels/convert.hpp"
#include "mini5d/model/gpt.hpp"

using namespace mini5d;

namespace {
constexpr double kU = 1.0 / 256;  // bf16 unit roundoff, 2^-8

enum class BlockKind { gpt2, llama, moe };
const char* name_of(BlockKind b) { return b == BlockKind::gpt2 ? "gpt-2" : b == BlockKind::llama ? "llama" : "gpt-2 + experts"; }

ModelConfig small_model(BlockKind block) {
  const bool llama = block == BlockKind::llama;
  ModelConfig m = test::fd_model(64, 32, 64, 2);
  m.d_model = 32;
  m.heads = 4;
  if (block == BlockKind::moe) m.experts = 4, m.top_k = 2, m.moe_every = 1;
  if (llama) {
    m.norm = Norm::rmsnorm, m.mlp = Mlp::swiglu, m.bias = false, m.positions = Positions::rope;
    m.kv_heads = 2;
    m.rope_theta = 100;
  }
  return m;
}

double norm_of(const Kokkos::View<double*, Kokkos::HostSpace>& v, std::int64_t b, std::int64_t e) {
  double s = 0;
  for (std::int64_t i = b; i < e; ++i) s += v(i) * v(i);
  return std::sqrt(s);
}

template <class G>
Kokkos::View<double*, Kokkos::HostSpace> host_double(const Vec<G>& g) {
  Vec<double> d("grads64", g.extent(0));
  kernels::convert("test::widen", d, g);
  return Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), d);
}

struct Errors {
  double loss = 0, worst_grad = 0;
  std::vector<int> routing;  // the experts each MoE block chose, block by block
};

template <class S>
std::vector<int> routing_of(const model::Gpt<S>& gpt) {
  std::vector<int> r;
  for (int l = 0; l < gpt.config().layers; ++l)
    if (const auto* moe = gpt.block(l).moe()) r.insert(r.end(), moe->chosen().begin(), moe->chosen().end());
  return r;
}

// Forward and backward of a model of storage type S on the given bf16 weights; its loss
// and gradient errors against the fp64 model's.
template <class S>
Errors against_fp64(const ModelConfig& m, const Vec<bf16>& weights, double loss64,
                    const Kokkos::View<double*, Kokkos::HostSpace>& g64, const test::Batch& batch, int B) {
  model::Gpt<S> gpt(m, B);
  kernels::convert("test::weights", gpt.params, weights);
  const int N = B * m.seq;
  gpt.zero_grads();
  const double loss = gpt.forward(batch.in, batch.tg, acc_t<S>(1.0 / N)) / N;
  gpt.backward();
  Errors e;
  e.routing = routing_of(gpt);
  e.loss = test::relative_to(loss, loss64, loss64);
  const auto g = host_double(gpt.grads);
  for (const auto& t : gpt.layout().tensors()) {
    const std::int64_t b = t.offset, end = t.offset + t.size();
    double diff = 0;
    for (std::int64_t i = b; i < end; ++i) diff += (g(i) - g64(i)) * (g(i) - g64(i));
    const double ref = norm_of(g64, b, end);
    INFO(t.name << ": |g64| " << ref);
    REQUIRE(ref > 0);
    // A NaN or Inf in either gradient makes diff (or ref) not finite, and the error +inf.
    e.worst_grad = test::worse(e.worst_grad, test::relative_to(std::sqrt(diff), 0.0, ref));
  }
  return e;
}

void check(BlockKind block) {
  const ModelConfig m = small_model(block);
  const int B = 2, N = B * m.seq;
  // Weights: the initial ones, perturbed so that no gradient is trivially small, then
  // rounded to bf16: the weights all three models hold.
  model::Gpt<double> ref(m, B);
  ref.init_params(42);
  test::perturb(ref.params, 99, 0.1);
  Vec<bf16> weights("weights", ref.params.extent(0));
  kernels::convert("test::round_weights", weights, ref.params);
  kernels::convert("test::exact_weights", ref.params, weights);
  const test::Batch batch = test::fixed_batch(N, m.vocab);
  ref.zero_grads();
  const double loss64 = ref.forward(batch.in, batch.tg, 1.0 / N) / N;
  ref.backward();
  const auto g64 = host_double(ref.grads);
  const std::vector<int> routing64 = routing_of(ref);

  const Errors e32 = against_fp64<float>(m, weights, loss64, g64, batch, B);
  const Errors e16 = against_fp64<bf16>(m, weights, loss64, g64, batch, B);
  const bool moe = block == BlockKind::moe;
  REQUIRE(e16.routing == routing64);  // the same experts, so the same function
  REQUIRE(e32.routing == routing64);
  if (moe) REQUIRE(!routing64.empty());
  const double loss_bound = (5 + (moe ? 12 : 11) * m.layers) * kU, grad_bound = (7 + (moe ? 25 : 21) * m.layers) * kU;
  std::printf("bf16 model (%s): loss %.4g, error %.3g (bound %.3g); worst gradient error %.3g (bound %.3g); "
              "fp32: %.3g, %.3g\n",
              name_of(block), loss64, e16.loss, loss_bound, e16.worst_grad, grad_bound, e32.loss,
              e32.worst_grad);
  CHECK(e16.loss <= loss_bound);
  CHECK(e16.worst_grad <= grad_bound);
  CHECK(test::worse(e16.loss, e16.worst_grad) > kU / 16);  // the bf16 path rounded (a NaN fails above)
  CHECK(e32.loss <= 1e-4);
  CHECK(e32.worst_grad <= 1e-4);
}
}  // namespace

TEST_CASE("bf16 model: fp32 main gradients and fp32 statistics", "[bf16][model]") {
  static_assert(std::is_same_v<decltype(model::Gpt<bf16>::grads)::value_type, float>);
  static_assert(std::is_same_v<decltype(model::Gpt<bf16>::params)::value_type, bf16>);
  // Kept activations: every [rows, cols] tensor in bf16, the statistics in fp32. Per
  // block LayerNorm keeps a mean and an rstd per row twice and blockwise attention a
  // log-sum-exp per (head, query); the head's LayerNorm a mean and an rstd per row.
  const ModelConfig m = small_model(BlockKind::gpt2);
  const int B = 2, N = B * m.seq;
  model::Gpt<float> f32(m, B);
  model::Gpt<bf16> b16(m, B);
  const std::int64_t stats = m.layers * (4 * N + std::int64_t(B) * m.heads * m.seq) + 2 * N;
  const std::int64_t wide = f32.activation_bytes() / 4 - stats;  // elements stored in S
  CHECK(b16.activation_bytes() == 2 * wide + 4 * stats);
  CHECK(b16.activation_bytes() < 0.55 * f32.activation_bytes());
  CHECK(mem::view_bytes(b16.params) * 2 == mem::view_bytes(f32.params));
  CHECK(mem::view_bytes(b16.grads) == mem::view_bytes(f32.grads));
}

TEST_CASE("bf16 model (GPT-2 block) against fp64 on the same weights", "[bf16][model]") { check(BlockKind::gpt2); }
TEST_CASE("bf16 model (Llama block, GQA, RoPE) against fp64 on the same weights", "[bf16][model]") {
  check(BlockKind::llama);
}
TEST_CASE("bf16 model (GPT-2 block with experts) against fp64 on the same weights", "[bf16][model]") {
  check(BlockKind::moe);
}
