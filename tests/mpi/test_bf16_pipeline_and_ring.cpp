// SPDX-License-Identifier: BSD-3-Clause
// bf16 training on the pipeline and context axes (part of test_bf16_layouts, 4 ranks).
// Pipeline: the boundary activations and their gradients travel between stages in
// bf16, as the stage holds them (parallel/pp/stage.hpp: the executor moves bytes).
// Context: ring attention's K/V blocks travel in bf16 and are widened to fp32 in hand;
// the travelling dK/dV is fp32 (parallel/cp/ring_attention.hpp).
// Each layout against the single-rank bf16 run with the same micro-batches, under the
// bounds of test_bf16_layouts.cpp, whose tolerance argument holds here unchanged: a
// pipeline stage computes exactly what one rank computes for its blocks (the boundary
// tensor is the bf16 value one rank keeps too), and a ring computes the same fp32
// online softmax on the same bf16 q, k, v in another block order, so only fp32 sum
// orders differ (and, at c2, the bf16 rounding of dk and dv summed over the ring in
// fp32 instead of per block). The bytes: pp boundary messages halve against fp32, the
// tie's gradient all-reduce (fp32 main gradients) stays; cp's K/V hops halve and its
// dK/dV hops stay, 2/3 of fp32's in all; every axis equals the planner.
#include <mpi.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <map>
#include <string>

#include "mini5d/comm/accounts.hpp"
#include "mini5d/train/trainer.hpp"
#include "bf16_bounds.hpp"
#include "invariance.hpp"
#include "layouts.hpp"
#include "mpi_util.hpp"

using namespace mini5d;
using test::Invariance;
using test::world_rank;

namespace {
const test::Tolerance kBf16 = test::kBf16Bounds;
const std::vector<std::string> kNullGradient = test::key_biases(4);  // up to 4 blocks here
const std::vector<std::string> kTied = {"model.tie_embeddings=true", "model.vocab_pad_to=3"};
using test::bf16_with;
}  // namespace

TEST_CASE("bf16 pipeline and ring: p2 (1F1B, interleaved), d2 x p2, t2 x p2, tied, c2, d2 x c2, t2 x c2",
          "[bf16][pp][cp][mpi]") {
  REQUIRE(test::world_size() == 4);
  const int steps = 6;
  struct Case {
    test::Layout layout;
    std::vector<std::string> extra;
  };
  const std::vector<Case> cases = {{"p2 m4 schedule=1f1b", {}},
                                   {"p2 v2 m4 layers4 schedule=interleaved", {}},
                                   {"d2 p2 m4 zero1 schedule=1f1b", {}},
                                   {"t2 p2 m4 sp schedule=1f1b", {}},
                                   {"p2 m4 zero1 schedule=1f1b", kTied},
                                   {"c2 m1", {}},
                                   {"d2 c2 m1 zero3", {}},
                                   {"t2 c2 m1 sp", {}},
                                   {"c2 m1 recompute=selective", {}}};
  for (const auto& cfg : test::configs()) {
    std::map<std::string, test::Reference> refs;  // by micro-batches, layers and tie
    for (const Case& c : cases) {
      test::Layout one;
      one.m = c.layout.m, one.layers = c.layout.layers;
      const std::string key = one.name() + (c.extra.empty() ? "" : " tied");
      if (!refs.count(key))
        refs.emplace(key, test::Reference::run(test::tiny(one, steps, bf16_with(cfg.overrides, c.extra))));
      const test::Reference& ref = refs.at(key);
      test::on_first_group(c.layout.ranks(), [&](MPI_Comm group) {
        train::Trainer tr(test::tiny(c.layout, steps, bf16_with(cfg.overrides, c.extra)), group);
        tr.run();
        const Invariance w = test::compare_runs(ref, tr, kNullGradient);
        const std::string what = c.layout.name() + (c.extra.empty() ? "" : " tied") + " (" + cfg.name + ")";
        INFO(what << ": loss " << w.loss << " grad_norm " << w.grad_norm << " sum " << w.sum << " sum_sq " << w.sum_sq);
        CHECK(test::within(w, kBf16));
        if (world_rank() == 0)
          std::printf("bf16 invariance %-40s loss %.2e  grad_norm %.2e  sum %.2e  sum_sq %.2e (%s)\n", what.c_str(),
                      w.loss, w.grad_norm, w.sum, w.sum_sq, w.worst_sum_sq_tensor.c_str());
      });
    }
  }
}

TEST_CASE("bf16 pipeline and ring bytes: boundaries halve, K/V hops halve, fp32 sums stay", "[bf16][pp][cp][mpi]") {
  // One fp32 and one bf16 run of 2 steps per layout. pp carries the boundary tensors
  // (activations) and, with tied embeddings, the sum of the two ends' fp32 gradients of
  // the embedding (grads). cp carries, per layer and micro-batch, the K/V block c - 1
  // times in the forward and c - 1 times in the backward, and the dK/dV block c - 1
  // times: bf16 / fp32 = (2 * 2 + 4) / (2 * 4 + 4) = 2/3.
  const int steps = 2;
  const std::vector<std::pair<test::Layout, std::vector<std::string>>> cases = {
      {"p2 m4 schedule=1f1b", {}},
      {"t2 p2 m4 sp schedule=1f1b", {}},
      {"d2 p2 m4 zero1 schedule=1f1b", kTied},
      {"c2 m1", {}},
      {"t2 c2 m1 sp", {}}};
  for (const auto& c : cases) {
    const test::Layout& l = c.first;
    const std::vector<std::string>& extra = c.second;  // a lambda may not capture a structured binding in C++17
    test::on_first_group(l.ranks(), [&](MPI_Comm group) {
      double pp_act[2], pp_grads[2], cp_act[2];
      for (int b = 0; b < 2; ++b) {
        comm::accounts().clear();
        train::Trainer tr(test::tiny(l, steps, b ? bf16_with(extra) : extra), group);
        tr.run();
        pp_act[b] = comm::accounts().bytes("pp", comm::Traffic::activations);
        pp_grads[b] = comm::accounts().bytes("pp", comm::Traffic::grads);
        cp_act[b] = comm::accounts().bytes("cp", comm::Traffic::activations);
        for (const auto& a : tr.record().traffic) {
          INFO(l.name() << (b ? " bf16 " : " fp32 ") << a.axis << ": measured " << a.measured << " predicted "
                        << a.predicted);
          CHECK(a.worst == 0);
        }
      }
      INFO(l.name() << ": pp activations " << pp_act[0] << " -> " << pp_act[1] << ", pp grads " << pp_grads[0] << " -> "
                    << pp_grads[1] << ", cp " << cp_act[0] << " -> " << cp_act[1]);
      CHECK(pp_act[1] == 0.5 * pp_act[0]);
      CHECK(pp_grads[1] == pp_grads[0]);
      CHECK(3 * cp_act[1] == 2 * cp_act[0]);
      if (l.p > 1) CHECK(pp_act[0] > 0);
      if (l.c > 1) CHECK(cp_act[0] > 0);
      if (!extra.empty()) CHECK(pp_grads[1] > 0);
    });
  }
}
