// SPDX-License-Identifier: BSD-3-Clause
// Expert parallelism through the trainer, under mpiexec -n 4, on inputs/moe-tiny.yaml
// (4 experts, top-2, dropless, every block MoE): layout invariance against the
// single-rank run through the shared oracle (tests/mpi/invariance.hpp) at e = 2 and 4,
// d2 x e2, e2 x t2, e2 x p2 and e2 x c2 at several ZeRO stages; the ep bytes of a step against the routing
// that happened; the training state memory against the prediction (dense tensors over
// d x c x e, experts over d x c); and a checkpoint saved at e = 2 resumed at e = 1 and
// e = 4; full recomputation with experts: invariance, ep bytes and kept activations.
#include <mpi.h>

#include <catch2/catch.hpp>
#include <cmath>

#include "mini5d/comm/accounts.hpp"
#include "mini5d/core/deck.hpp"
#include "mini5d/plan/cost/axis_traffic.hpp"
#include "mini5d/plan/cost/memory_model.hpp"
#include "mini5d/train/deck_plan.hpp"
#include "mini5d/train/trainer.hpp"
#include "ep_bytes.hpp"
#include "invariance.hpp"
#include "layouts.hpp"
#include "mpi_util.hpp"
#include "reshard_check.hpp"

using namespace mini5d;
using test::kGlobalBatch;
using test::Layout;
using test::moe_tiny;
using test::world_max;
using test::world_rank;

TEST_CASE("layout invariance (dropless): e = 2 and 4, d2 x e2, e2 x t2, e2 x p2, e2 x c2", "[ep][mpi][threads]") {
  REQUIRE(test::world_size() == 4);
  // ZeRO 1 and 3 move the same sums as 0 and 2 (they shard the moments and weights,
  // which the checksum and the memory test see): one of each pair per layout keeps
  // the case short.
  const std::vector<Layout> layouts = {"e2 zero0", "e4 zero3", "d2 e2 zero1", "d2 e2 zero2",
                                       "e2 t2 zero0", "e2 t2 zero3", "e2 p2 zero1", "e2 c2 zero1"};
  for (const auto& c : test::configs()) {
    const test::Reference ref = test::Reference::run(moe_tiny(Layout{}, 10, c.overrides));
    for (const auto& l : layouts)
      test::on_first_group(l.ranks(), [&](MPI_Comm group) {
        train::Trainer tr(moe_tiny(l, 10, c.overrides), group);
        tr.run();
        const auto w = test::compare_runs(ref, tr);
        // The aux loss and the expert loads are layout-invariant too (per-sequence
        // statistics; the loads are integers).
        double aux = 0, load = 0;
        for (std::size_t s = 0; s < ref.history().size() && s < tr.record().history.size(); ++s) {
          const auto &a = ref.history()[s], &b = tr.record().history[s];
          aux = test::worse(aux, test::relative_to(b.aux_loss, a.aux_loss, a.aux_loss));
          for (std::size_t e = 0; e < a.expert_load.size(); ++e)
            load = test::worse(load, test::abs_error(b.expert_load.at(e), a.expert_load[e]));
        }
        aux = world_max(aux);
        load = world_max(load);
        INFO(l.name() << ", " << c.name << ": loss " << w.loss << ", grad norm " << w.grad_norm << ", sum " << w.sum
                      << ", sum of squares " << w.sum_sq << ", aux " << aux << ", load " << load);
        CHECK(test::within(w));
        CHECK(aux <= 1e-5);
        CHECK(load == 0);
        if (world_rank() == 0)
          std::printf("invariance %s, %s: loss %.3g, grad norm %.3g, sum %.3g, sum of squares %.3g, aux %.3g\n",
                      l.name().c_str(), c.name.c_str(), w.loss, w.grad_norm, w.sum, w.sum_sq, aux);
      });
  }
}

TEST_CASE("full recomputation with experts: e = 2, e2 x t2, e2 x c2 match one rank without it", "[ep][mpi][recompute]") {
  REQUIRE(test::world_size() == 4);
  // The recomputed forward rebuilds ln1, attention and ln2 and leaves the MoE layer
  // alone (model/block.hpp): the arithmetic is the first forward's, so the runs match
  // the single rank that recomputes nothing.
  const std::vector<std::string> full = {"train.recompute=full"};
  for (const auto& c : test::configs()) {
    const test::Reference ref = test::Reference::run(moe_tiny(Layout{}, 6, c.overrides));
    for (const Layout l : {"e2 zero0", "e2 t2 zero2", "e2 c2 zero3"})
      test::on_first_group(l.ranks(), [&](MPI_Comm group) {
        auto over = c.overrides;
        over.insert(over.end(), full.begin(), full.end());
        train::Trainer tr(moe_tiny(l, 6, over), group);
        // Before a step the model holds its fixed buffers: the planner's full-recompute
        // figure (block outputs, the MoE layers' routing state, embeddings, head) without
        // the routed rows, which the router sizes; the shared set is a dense block's.
        const Deck& d = tr.deck();
        const plan::ModelDesc md = train::plan_model(d);
        const plan::Layout pl = train::plan_layout(d);
        const auto blocks = plan::stage_blocks(md, pl, 0, d.model.moe_every);
        const double routed = blocks.moe * plan::moe_routed_bytes(plan::act_shape(md, pl, Precision::fp32));
        const auto want = tr.predicted_activation_memory();
        const auto got = tr.measured_activation_memory();
        test::RoutedBytes moved;
        tr.run([&](const train::StepStats&) { moved.add(tr); });
        // Per step the tensor ranks repeat the attention half's collectives and the ring
        // its K/V hops; the experts' all-to-alls are not repeated: the planner's bytes on
        // every axis (e: the mean over the ranks, a rank's share follows the router, and
        // each rank's the rows its routing moved; d with ZeRO 3: the gathers of the
        // runtime's own buffer rule, zero3_buffers.hpp).
        const double e_rank = world_max(test::ep_rank_difference(tr, moved));
        double worst = 0, e_mean = 0;
        for (const auto& a : tr.record().traffic) {
          if (a.axis == "e")
            e_mean = std::abs(a.mean_measured - a.mean_predicted) / a.mean_predicted;
          else
            worst = test::worse(worst, a.worst);
        }
        worst = world_max(worst);
        e_mean = world_max(e_mean);
        const auto w = test::compare_runs(ref, tr);
        INFO(l.name() << ", " << c.name << ": loss " << w.loss << ", grad norm " << w.grad_norm << ", sum " << w.sum
                      << ", sum of squares " << w.sum_sq << "; activations " << got.activations << " / "
                      << want.activations - routed << ", workspace " << got.workspace << " / " << want.workspace
                      << "; bytes per step: worst of t, c, p, d " << worst << ", e mean " << e_mean
                      << ", e per rank " << e_rank);
        CHECK(test::within(w));
        CHECK(test::all_ranks(got.activations == want.activations - routed));
        CHECK(test::all_ranks(got.workspace == want.workspace));
        CHECK(worst == 0);
        CHECK(e_mean <= 1e-12);
        CHECK(e_rank <= 1e-12);
        if (world_rank() == 0)
          std::printf("full recompute %s, %s: loss %.3g, grad norm %.3g, sum of squares %.3g; kept activations %.0f "
                      "= planner\n",
                      l.name().c_str(), c.name.c_str(), w.loss, w.grad_norm, w.sum_sq, got.activations);
      });
  }
}

TEST_CASE("ep bytes of a step equal the routing that happened", "[ep][mpi]") {
  // Per MoE layer and micro-batch a rank sends its S routed rows and receives R rows
  // (the counts it exchanged): dispatch S, combine R, and the same again backward,
  // D floats each: (2 S + 2 R) * D * 4 bytes of activations. The count exchange gathers
  // E doubles from each of the P ranks per layer; the global norm adds one double.
  for (const Layout l : {"e2 zero0", "e4 zero0", "e2 t2 zero0"})
    test::on_first_group(l.ranks(), [&](MPI_Comm group) {
      comm::accounts().clear();
      train::Trainer tr(moe_tiny(l, 1), group);
      tr.run();
      const auto& m = tr.deck().model;
      double rows = 0, sent = 0;
      int moe_layers = 0;
      for (int b = 0; b < m.layers; ++b)
        if (const auto* moe = tr.model().block(b).moe()) {
          rows += moe->send_plan().rows + moe->receive_plan().rows;
          sent += moe->send_plan().rows;
          ++moe_layers;
        }
      const double P = l.e * l.t, f = sizeof(float), D = m.d_model;
      const double want = 2 * rows * D * f, got = comm::accounts().bytes("ep", comm::Traffic::activations);
      const double scalars = comm::accounts().bytes("ep", comm::Traffic::scalars);
      // Every row any rank sent is counted once in the step's global expert loads.
      double all_sent = sent, load = 0;
      MPI_Allreduce(MPI_IN_PLACE, &all_sent, 1, MPI_DOUBLE, MPI_SUM, group);
      for (double x : tr.record().history.back().expert_load) load += x;
      INFO(l.name());
      CHECK(got == want);
      // The routing's count exchange only: the step's own scalars (loss, norm, MoE
      // statistics) travel once over every rank, accounted as "world", not over ep.
      CHECK(scalars == moe_layers * m.experts * P * 8);
      CHECK(all_sent == load);
      CHECK(load == double(kGlobalBatch) * m.seq * m.top_k * moe_layers);  // dropless
      CHECK(world_max(std::abs(got - want)) == 0);
      if (world_rank() == 0) std::printf("ep bytes %s: %.0f of activations, as the routing says\n", l.name().c_str(), got);
    });
}

TEST_CASE("training state memory: dense tensors over d x c x e, experts over d x c", "[ep][mpi][memory]") {
  for (const Layout l : {"e2 zero0", "e2 zero3", "d2 e2 zero1", "d2 e2 zero2", "d2 e2 zero3", "e4 zero3",
                         "e2 t2 zero3", "e2 p2 zero1", "e2 c2 zero3"})
    test::on_first_group(l.ranks(), [&](MPI_Comm group) {
      train::Trainer tr(moe_tiny(l, 0), group);
      const auto want = tr.predicted_state_memory(), got = tr.measured_state_memory();
      INFO(l.name());
      // ZeRO parts differ by one element where a group does not divide a chunk.
      const double slack = 4.0 * 2 * (tr.model().layout().units().size() * 2);
      CHECK(std::abs(got.weights - want.weights) <= slack);
      CHECK(std::abs(got.gradients - want.gradients) <= slack);
      CHECK(std::abs(got.optimizer - want.optimizer) <= 2 * slack);
      // Each rank holds E / (e t) experts.
      const auto& m = tr.deck().model;
      const double one_expert = 2.0 * m.ffn * m.d_model + m.ffn + m.d_model;
      CHECK(double(tr.model().layout().expert_total()) == m.layers / l.p * one_expert * m.experts / (l.e * l.t));
      CHECK(tr.measured_expert_params() == tr.predicted_expert_params());  // the planner's formula
    });
}

TEST_CASE("a checkpoint saved at e = 2 resumes at e = 1 and e = 4", "[ep][mpi][checkpoint]") {
  test::check_reshard(test::input_deck("moe-tiny.yaml"), Layout(), "e2 zero1", {"zero0", "e4 zero2"}, 6, 3, "ep_reshard");
}
