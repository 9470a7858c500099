// SPDX-License-Identifier: BSD-3-Clause
// Context parallelism through the trainer, under mpiexec -n 4 (docs/architecture.md): layout
// invariance against the single-rank run through the shared oracle (losses and pre-clip
// gradient norms step by step, parameter checksums at the end; the tiny deck as it is
// and with clipping off and weight decay on) for c = 2, c = 4, c2 x t2, c2 x d2 at ZeRO 1
// and 3, and c2 x p2 (the pipeline's boundary tensors are the rank's chunks); the cp bytes of a step against the analytic K/V bill; the activation
// memory the model allocates against the planner's formulas; the ring's blocks per rank
// (zig-zag equal, the contiguous test split not); and a checkpoint saved at c = 2
// resumed at c = 1 and c = 4.
#include <mpi.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>

#include "mini5d/comm/accounts.hpp"
#include "mini5d/core/deck.hpp"
#include "mini5d/train/trainer.hpp"
#include "invariance_check.hpp"
#include "layouts.hpp"
#include "mpi_util.hpp"
#include "reshard_check.hpp"

using namespace mini5d;
using test::Group;
using test::kGlobalBatch;
using test::Layout;
using test::tiny;
using test::world_max;
using test::world_rank;

TEST_CASE("layout invariance: c = 2, c = 4, c2 x t2, c2 x d2 at ZeRO 1 and 3, c2 x p2", "[cp][mpi][threads]") {
  REQUIRE(test::world_size() == 4);
  const std::vector<Layout> layouts = {"c2", "c4", "c2 t2", "d2 c2 zero1", "d2 c2 zero3", "c2 p2"};
  for (const auto& cfg : test::configs()) {
    const test::Reference ref = test::Reference::run(tiny(Layout{}, 10, cfg.overrides));
    for (const auto& l : layouts)
      test::on_first_group(l.ranks(), [&](MPI_Comm group) {
        train::Trainer tr(tiny(l, 10, cfg.overrides), group);
        tr.run();
        test::check_invariant(ref, tr, l.name(), cfg.name);
      });
  }
}

TEST_CASE("cp bytes of a step equal the analytic K/V bill; blocks per rank", "[cp][mpi][bytes][balance]") {
  // Per layer and micro-batch, a block is K and V of the rank's T/c tokens of B
  // sequences and its H/t heads: 2 * B * (T/c) * (D/t) * 4 bytes. The forward shifts
  // c-1 of them; the backward c-1 K/V blocks again and c-1 dK/dV blocks; selective
  // recomputation reruns the forward's c-1 in the backward.
  for (const Layout l : {"c2", "c4", "c2 t2", "c2 recompute=selective"}) {
    Group g(l.ranks());
    comm::accounts().clear();
    train::Trainer tr(tiny(l, 1), g.comm);
    tr.run();
    const auto& m = tr.deck().model;
    const double block = 2.0 * kGlobalBatch * (m.seq / l.c) * (m.d_model / l.t) * sizeof(float);
    const double hops = (tr.deck().train.recompute == Recompute::selective ? 4 : 3) * (l.c - 1) * m.layers;
    const double got = comm::accounts().bytes("cp", comm::Traffic::activations);
    INFO(l.name());
    CHECK(world_max(std::abs(got - hops * block)) == 0);
    // Every zig-zag rank computes 2c + 1 blocks per layer per forward.
    const auto& st = tr.model().ring()->stats();
    const double per_layer = double(st.forward_blocks) / double(st.forward_calls);
    CHECK(world_max(std::abs(per_layer - (2 * l.c + 1))) == 0);
    if (world_rank() == 0)
      std::printf("%s: cp bytes per step %.0f (analytic %.0f), blocks per layer %.0f\n", l.name().c_str(), got,
                  hops * block, per_layer);
  }
  // The contiguous split (a test switch) computes the same result with 4i + 3 blocks
  // on rank i: the imbalance zig-zag removes.
  setenv("MINI5D_CP_SPLIT", "contiguous", 1);
  {
    const test::Reference ref = test::Reference::run(tiny(Layout{}, 3));
    Group g(4);
    train::Trainer tr(tiny("c4", 3), g.comm);
    tr.run();
    const auto& st = tr.model().ring()->stats();
    double blocks = double(st.forward_blocks) / double(st.forward_calls), most = blocks, least = blocks;
    MPI_Allreduce(MPI_IN_PLACE, &most, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &least, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
    CHECK(least == 3);
    CHECK(most == 15);
    const auto w = test::compare_runs(ref, tr);
    CHECK(test::within(w));
    if (world_rank() == 0)
      std::printf("contiguous c=4: blocks per layer %g..%g (max / mean - 1 = %.1f%%), loss %.3g\n", least, most,
                  100 * (most / 9.0 - 1), w.loss);
  }
  unsetenv("MINI5D_CP_SPLIT");
}

TEST_CASE("activation memory equals the planner's formulas with c", "[cp][mpi][memory]") {
  for (const Layout l : {"c2", "c4", "c2 t2", "c2 recompute=selective", "c2 t2 recompute=full",
                         "c4 recompute=full"}) {
    Group g(l.ranks());
    train::Trainer tr(tiny(l, 0), g.comm);
    const auto want = tr.predicted_activation_memory(), got = tr.measured_activation_memory();
    INFO(l.name());
    CHECK(got.activations == want.activations);
    CHECK(got.workspace == want.workspace);
    // The ring's comm buffers, as the planner's comm_buffer_bytes counts them: K/V in
    // hand and arriving, dK/dV in hand and arriving, 2 * B * (T/c) * (D/t) floats each.
    const auto& m = tr.deck().model;
    const double block = 2.0 * kGlobalBatch * (m.seq / l.c) * (m.d_model / l.t) * sizeof(float);
    CHECK(double(tr.model().ring()->comm_buffer_bytes()) == 4 * block);
  }
}

TEST_CASE("a checkpoint saved at c = 2 resumes at c = 1 and c = 4", "[cp][mpi][checkpoint]") {
  test::check_reshard(test::input_deck("tiny.yaml"), Layout(), "c2 zero1", {Layout(), "c4"}, 6, 3, "cp_reshard");
}
