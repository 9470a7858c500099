// SPDX-License-Identifier: BSD-3-Clause
// Llama's block parts (model.norm=rmsnorm, model.mlp=swiglu, model.bias=false), rotary
// positions (model.positions=rope) and grouped-query attention (model.kv_heads=2: two
// query heads per key/value head) on every axis, under mpiexec -n 4, on
// inputs/llama-tiny.yaml:
//   * layout invariance against the single-rank run through the shared oracle
//     (tests/mpi/invariance.hpp), in both configurations, at t2 (the fused gate|up
//     column-parallel, down row-parallel, the RMSNorm gains' gradients summed over t),
//     p2, c2 and c4 (zig-zag chunks: rope turns each by its global positions), t2 x c2
//     with selective recompute (the core, rope included, rebuilt in the backward) and d2
//     at ZeRO 3; and with SwiGLU experts (4, top-2) at e2 and e2 x t2;
//   * in each of those runs the bytes per step of every axis equal the planner's
//     (the expert all-to-alls as the mean over the ranks, as test_five_axes does, and
//     on each rank the rows its own routing moved, ep_bytes.hpp);
//   * the activations, work buffers and training state the runtime allocates equal the
//     planner's formulas (t = 1, 2 with SP on and off, every recompute mode; c = 2 (the
//     rope table of the rank's positions); d2 at ZeRO 0-3; the experts' parameters per
//     rank);
//   * with one key/value head (model.kv_heads=1): c2 matches one rank, its c bytes are
//     the planner's and a quarter of multi-head attention's, and its memory the planner's;
//     t2 and d2 x t2 at ZeRO 2 (the key/value head replicated on both tensor ranks, its
//     gradient summed over them: whole, or each rank's ZeRO part) match one rank with the
//     planner's t bytes;
//   * a checkpoint saved at d2 x t2 resumes at t = 1 and t = 4 (kv_heads 2: each key/value
//     head replicated on two ranks), one saved at t2 x c2 at one rank;
//   * under mpiexec -n 16 (the [np16] case, its own CTest): four axes at once,
//     d2 x t2 x p2 x c2 at ZeRO 1, matches one rank with every axis's bytes the planner's.
#include <mpi.h>

#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "mini5d/parallel/cp/ring_attention.hpp"
#include "mini5d/train/trainer.hpp"
#include "compare.hpp"
#include "ep_bytes.hpp"
#include "invariance_check.hpp"
#include "layouts.hpp"
#include "mpi_util.hpp"
#include "reshard_check.hpp"

using namespace mini5d;
using test::Group;
using test::Layout;
using test::world_max;

namespace {
// A gentle learning rate: top-2 routing must not meet a near-tie that rounding (which
// differs between layouts) could flip.
const std::vector<std::string> kExperts = {"model.experts=4", "model.top_k=2", "train.lr=1e-3"};

Deck llama(const Layout& l, long steps, const std::vector<std::string>& extra = {}) {
  std::vector<std::string> o = {"output.report="};
  o.insert(o.end(), extra.begin(), extra.end());
  return test::layout_deck(test::input_deck("llama-tiny.yaml"), l, steps, o);
}

// Every axis's bytes per step equal the planner's on every rank (the expert all-to-alls,
// which follow the router: as the mean over the ranks, and on each rank the rows its
// routing moved, `routed`). Collective over the world.
void check_traffic(const train::Trainer& tr, const test::RoutedBytes& routed, const std::string& what) {
  const double e_rank = world_max(test::ep_rank_difference(tr, routed));
  double worst = 0, e_mean = 0;
  std::string worst_axis;
  for (const auto& a : tr.record().traffic) {
    if (a.axis == "e") {
      e_mean = test::relative_to(a.mean_measured, a.mean_predicted, a.mean_predicted);
    } else if (!(a.worst <= worst)) {  // a NaN is kept, as +inf
      worst = test::worse(worst, a.worst);
      worst_axis = a.axis;
    }
  }
  INFO(what << ": worst relative difference " << world_max(worst) << " (axis " << worst_axis << " on this rank), of e's mean "
            << world_max(e_mean) << ", of e's per rank " << e_rank);
  CHECK(world_max(worst) == 0);
  CHECK(world_max(e_mean) <= 1e-12);
  CHECK(e_rank <= 1e-12);
}

void check_layouts(const std::vector<Layout>& layouts, const std::vector<std::string>& extra, long steps = 10) {
  for (const auto& c : test::configs()) {
    std::vector<std::string> o = c.overrides;
    o.insert(o.end(), extra.begin(), extra.end());
    const test::Reference ref = test::Reference::run(llama(Layout{}, steps, o));
    for (const auto& l : layouts)
      test::on_first_group(l.ranks(), [&](MPI_Comm group) {
        train::Trainer tr(llama(l, steps, o), group);
        test::RoutedBytes routed;
        tr.run([&](const train::StepStats&) { routed.add(tr); });
        test::check_invariant(ref, tr, "llama-tiny " + l.name() + (extra.empty() ? "" : " " + extra.front()), c.name);
        check_traffic(tr, routed, l.name());
      });
  }
}
}  // namespace

TEST_CASE("llama-tiny: t2, p2, c2, c4, t2 c2 and d2 at ZeRO 3 match one rank; bytes per axis are the planner's",
          "[llama][mpi][threads]") {
  REQUIRE(test::world_size() == 4);
  check_layouts({"t2", "p2", "c2", "c4", "t2 c2 recompute=selective", "d2 zero3"}, {});
}

TEST_CASE("llama-tiny: d2 x t2 x p2 x c2 (16 ranks) matches one rank; bytes per axis are the planner's",
          "[llama][mpi][np16]") {
  // Four steps, not ten: sixteen ranks share two cores in CI.
  check_layouts({"d2 t2 p2 c2 zero1"}, {}, 4);
}

TEST_CASE("llama-tiny with SwiGLU experts: e2 and e2 x t2 match one rank", "[llama][mpi][ep]") {
  // e2 x t2 at ZeRO 2: each rank sums over t only the replicated gradients in its ZeRO
  // part of each unit, which the planner's t bytes follow rank by rank.
  check_layouts({"e2 zero3", "e2 t2 zero2"}, kExperts);
}

TEST_CASE("llama-tiny: activations, work buffers and training state equal the planner's", "[llama][mpi][memory]") {
  for (int t : {1, 2})
    for (bool sp : {true, false})
      for (const char* r : {"none", "selective", "full"}) {
        if (t == 1 && !sp) continue;
        Layout l;
        l.t = t, l.sp = sp, l.recompute = r;
        Group g(t);
        train::Trainer tr(llama(l, 0), g.comm);
        const auto want = tr.predicted_activation_memory(), got = tr.measured_activation_memory();
        INFO(l.name());
        CHECK(got.activations == want.activations);
        CHECK(got.workspace == want.workspace);
      }
  {
    // Ring attention's buffers, and the rope table of the rank's T/c positions.
    Layout l("c2");
    Group g(2);
    train::Trainer tr(llama(l, 0), g.comm);
    const auto want = tr.predicted_activation_memory(), got = tr.measured_activation_memory();
    INFO(l.name());
    CHECK(got.activations == want.activations);
    CHECK(got.workspace == want.workspace);
  }
  for (int zero = 0; zero <= 3; ++zero) {
    Layout l("d2");
    l.zero = zero;
    Group g(2);
    train::Trainer tr(llama(l, 0), g.comm);
    const auto want = tr.predicted_state_memory(), got = tr.measured_state_memory();
    INFO(l.name());
    CHECK(got.weights == want.weights);
    CHECK(got.gradients == want.gradients);
    CHECK(got.optimizer == want.optimizer);
  }
  for (const Layout l : {"e2", "e2 t2"}) {
    Group g(l.ranks());
    train::Trainer tr(llama(l, 0, kExperts), g.comm);
    INFO(l.name() << " experts");
    // Each rank holds E / (e t) whole SwiGLU experts: gate, up and down, no biases.
    const auto& m = tr.deck().model;
    const double one_expert = 3.0 * m.ffn * m.d_model;
    CHECK(double(tr.model().layout().expert_total()) == m.layers * one_expert * m.experts / (l.e * l.t));
    CHECK(tr.measured_expert_params() == tr.predicted_expert_params());
  }
}

TEST_CASE("llama-tiny with one key/value head: c2 and t2 match one rank; c bytes are 1/4 of MHA's",
          "[llama][mpi][gqa]") {
  const std::vector<std::string> one_kv = {"model.kv_heads=1"};
  check_layouts({"c2", "t2", "d2 t2 zero2"}, one_kv);
  // The ring carries the key/value heads only: with 4 query heads over 1 key/value head,
  // a quarter of multi-head attention's bytes (the planner's, checked above).
  auto cp_bytes = [](const std::vector<std::string>& o) {
    Group g(2);
    train::Trainer tr(llama("c2", 2, o), g.comm);
    tr.run();
    for (const auto& a : tr.record().traffic)
      if (a.axis == "c") return a.measured;
    return -1.0;
  };
  const double gqa = cp_bytes(one_kv), mha = cp_bytes({"model.kv_heads=4"});
  CHECK(gqa > 0);
  CHECK(4 * gqa == mha);
  for (const char* r : {"none", "selective"}) {
    Layout l("c2");
    l.recompute = r;
    Group g(2);
    train::Trainer tr(llama(l, 0, one_kv), g.comm);
    const auto want = tr.predicted_activation_memory(), got = tr.measured_activation_memory();
    INFO(l.name());
    CHECK(got.activations == want.activations);
    CHECK(got.workspace == want.workspace);
    // The ring's K/V and dK/dV buffers (in hand and arriving) hold the one key/value
    // head of 16: 4 x 2 x B x (T/c) x 16 floats, as the planner's comm_buffer_bytes.
    const auto& d = tr.deck();
    const double block = 2.0 * d.train.micro_batch * (d.model.seq / 2) * (d.model.d_model / d.model.heads) * 4;
    CHECK(double(tr.model().ring()->comm_buffer_bytes()) == 4 * block);
  }
}

TEST_CASE("llama-tiny: a checkpoint saved at d2 x t2 resumes at t = 1 and t = 4, one at t2 x c2 at one rank", "[llama][mpi][checkpoint]") {
  test::check_reshard(test::input_deck("llama-tiny.yaml"), Layout(), "d2 t2 zero1", {"zero0", "t4 zero0"}, 6, 3,
                      "llama_reshard");
  // Rotary positions at c = 2 (zig-zag) and t = 2 save the same logical tensors (no
  // position table) as one rank reads.
  test::check_reshard(test::input_deck("llama-tiny.yaml"), Layout(), "t2 c2", {"zero0"}, 6, 3, "llama_rope_reshard");
}
