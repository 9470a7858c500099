// SPDX-License-Identifier: BSD-3-Clause
// The mixture-of-experts layer on one rank, in fp64:
//   finite differences of the whole model's objective (token loss + load-balancing
//   loss) for every tensor (router, experts, and the dense tensors around them) at
//   top-1 and top-2, with every block MoE and with every other block, and with
//   llama-tiny's block parts (SwiGLU experts, RMSNorm, no biases);
//   the routing plans on crafted routings: the send order, the receive permutation, and
//   capacity mode's dropped counts, exactly.
#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "fd_harness.hpp"
#include "mini5d/model/gpt.hpp"
#include "mini5d/parallel/ep/routing.hpp"

using namespace mini5d;

namespace {
using Model = model::Gpt<double>;

// The experts every MoE block picked in the last forward, in a canonical order (which
// activation set a block runs in changes from one forward to the next).
std::vector<int> routing(const Model& m) {
  std::vector<std::vector<int>> sets;
  for (int l = 0; l < m.config().layers; ++l)
    if (const auto* moe = m.block(l).moe()) sets.push_back(moe->chosen());
  std::sort(sets.begin(), sets.end());
  std::vector<int> r;
  for (const auto& s : sets) r.insert(r.end(), s.begin(), s.end());
  return r;
}

// Worst relative error (per tensor: max |analytic - numeric| / max |numeric|) over
// the tensors; perturbations that change a routing decision (a top-k tie crossed,
// where the objective is not differentiable) are left out and counted.
void check(int top_k, int moe_every, bool llama = false) {
  ModelConfig m = test::fd_model(11, 5, 12, 2);
  if (llama) m.norm = Norm::rmsnorm, m.mlp = Mlp::swiglu, m.bias = false;
  m.experts = 4;
  m.top_k = top_k;
  m.moe_every = moe_every;
  const int B = 2, N = B * m.seq;
  model::ModelParallel par;
  par.aux_loss_coef = 0.3;  // large enough that the aux gradient matters
  Model gpt(m, B, Model::Owns::params_and_grads, par);
  gpt.init_params(42);
  test::perturb(gpt.params, 99, 0.3);
  const test::Batch batch = test::fixed_batch(N, m.vocab);
  const double scale = 1.0 / N;
  auto objective = [&] {
    const double ce = gpt.forward(batch.in, batch.tg, scale);
    return scale * (ce + gpt.last_aux_loss());
  };
  gpt.zero_grads();
  objective();
  gpt.backward();
  REQUIRE(gpt.last_aux_loss() > 0);
  const auto base_routing = routing(gpt);
  auto hp = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), gpt.params);
  auto hg = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), gpt.grads);
  const double h = 1e-5;
  int skipped = 0, checked = 0, moe_tensors = 0;
  for (const auto& t : gpt.layout().tensors()) {
    test::FdError fd;
    for (std::int64_t i = t.offset; i < t.offset + t.size(); ++i) {
      auto put = [&](double x) {
        hp(i) = x;
        Kokkos::deep_copy(gpt.params, hp);
      };
      bool same_routing = true;
      auto f = [&] {
        const double v = objective();
        same_routing = same_routing && routing(gpt) == base_routing;
        return v;
      };
      const double num = test::central_difference(hp(i), h, put, f);
      if (!same_routing) {
        ++skipped;
        continue;
      }
      ++checked;
      fd.add(num, hg(i));
    }
    const double err = fd.relative();
    if (t.name.find("moe") != std::string::npos) ++moe_tensors;
    INFO("top_k " << top_k << " moe_every " << moe_every << " tensor " << t.name << " relative error " << err);
    CHECK(err < 1e-6);
    // The router learns at top-1 from the aux loss alone: its gradient is not zero.
    if (t.name.find("router") != std::string::npos) CHECK(fd.scale() > 1e-6);
  }
  INFO("perturbations that changed a routing decision: " << skipped << " of " << skipped + checked);
  CHECK(skipped * 50 < checked);
  // Router, fc (or gate|up) and proj weights, and the two expert biases unless llama.
  CHECK(moe_tensors == (llama ? 3 : 5) * (moe_every == 1 ? 2 : 1));
}
}  // namespace

TEST_CASE("MoE model at top-1: every gradient, aux loss included, by finite differences", "[moe][grad]") {
  check(1, 1);
}
TEST_CASE("MoE model at top-2: every gradient, aux loss included, by finite differences", "[moe][grad]") {
  check(2, 1);
  check(2, 2);  // block 1 MoE, block 0 dense
}
TEST_CASE("MoE model with SwiGLU experts, RMSNorm, no biases: every gradient by finite differences",
          "[moe][grad][swiglu]") {
  check(2, 2, true);  // a dense SwiGLU block and a block of SwiGLU experts
}

TEST_CASE("send plan: rows sorted by expert, first choices first; receive plan slabs", "[moe][routing]") {
  // 3 tokens, top-2 over 4 experts on 2 expert ranks (experts 0-1 on rank 0, 2-3 on rank 1).
  const std::vector<int> chosen = {2, 0, 0, 3, 2, 1};  // token 0: {2, 0}, token 1: {0, 3}, token 2: {2, 1}
  const auto p = ep::plan_send(chosen, 3, 2, 4, 2, -1);
  CHECK(p.count == std::vector<int>{2, 1, 2, 1});
  CHECK(p.send_rows == std::vector<int>{3, 3});
  CHECK(p.rows == 6);
  // expert 0: token 1 slot 0 (row 0) then token 0 slot 1 (row 1); expert 1: token 2 slot 1;
  // expert 2: tokens 0 and 2 slot 0 (rows 3, 4); expert 3: token 1 slot 1 (row 5).
  CHECK(p.row == std::vector<int>{3, 1, 0, 5, 4, 2});
  CHECK(p.total_dropped() == 0);
  // Rank 1 receives from ranks 0 and 1 (counts of experts 2, 3): 2+1 and 1+2 rows.
  const std::vector<double> counts = {2, 1, 2, 1, 0, 1, 1, 2};
  const auto r = ep::plan_receive(counts, 4, 2, 1);
  CHECK(r.recv_rows == std::vector<int>{3, 3});
  CHECK(r.expert_rows == std::vector<int>{3, 3});
  CHECK(r.expert_begin == std::vector<int>{0, 3});
  // Received: [rank 0: e2 e2 e3][rank 1: e2 e3 e3] -> expert-major: e2 = 0,1,3; e3 = 2,4,5.
  CHECK(r.order == std::vector<int>{0, 1, 3, 2, 4, 5});
}

TEST_CASE("capacity mode: dropped counts on a crafted routing are exact", "[moe][routing]") {
  // 8 tokens, top-2, 4 experts: capacity ceil(1.0 * 8 * 2 / 4) = 4 per expert.
  CHECK(ep::expert_capacity(1.0, 8, 2, 4) == 4);
  CHECK(ep::expert_capacity(0.5, 8, 2, 4) == 2);
  CHECK(ep::expert_capacity(0.0, 8, 2, 4) == -1);
  // First choices: expert 0 for tokens 0-5, expert 1 for 6-7; second choices: expert 0
  // for tokens 6-7, expert 2 for 0-5.
  std::vector<int> chosen;
  for (int i = 0; i < 8; ++i) {
    chosen.push_back(i < 6 ? 0 : 1);
    chosen.push_back(i < 6 ? 2 : 0);
  }
  const auto p = ep::plan_send(chosen, 8, 2, 4, 1, 4);
  // Expert 0 takes tokens 0-3's first choices; 4-5's first and 6-7's second are dropped.
  CHECK(p.dropped == std::vector<int>{4, 0, 2, 0});
  CHECK(p.count == std::vector<int>{4, 2, 4, 0});
  CHECK(p.total_dropped() == 6);
  for (int i = 0; i < 8; ++i) {
    INFO("token " << i);
    CHECK((p.row[std::size_t(2 * i)] < 0) == (i == 4 || i == 5));
    CHECK((p.row[std::size_t(2 * i + 1)] < 0) == (i >= 4));
  }
  // At capacity 2 the drops follow the same priority.
  const auto q = ep::plan_send(chosen, 8, 2, 4, 1, 2);
  CHECK(q.dropped == std::vector<int>{6, 0, 4, 0});
}
