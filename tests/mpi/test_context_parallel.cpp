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
#include <filesystem>

#include "mini5d/comm/accounts.hpp"
#include "mini5d/core/deck.hpp"
#include "mini5d/train/param_checksum.hpp"
#include "mini5d/train/trainer.hpp"
#include "invariance_check.hpp"
#include "mpi_util.hpp"
#include "reshard.hpp"

using namespace mini5d;
namespace fs = std::filesystem;
using test::Group;
using test::world_max;
using test::world_rank;

namespace {
const std::string kTiny = std::string(MINI5D_SOURCE_DIR) + "/inputs/tiny.yaml";
constexpr int kGlobalBatch = 16;

struct Layout {
  int d = 1, c = 1, t = 1, zero = 0;
  std::string recompute = "none";
  int p = 1;  // a pipeline runs 2 micro-batches of half the sequences (the same global batch)
  std::string name() const {
    return "d" + std::to_string(d) + " c" + std::to_string(c) + " t" + std::to_string(t) +
           (p > 1 ? " p" + std::to_string(p) : "") + " zero" + std::to_string(zero) +
           (recompute != "none" ? " recompute " + recompute : "");
  }
  int ranks() const { return d * c * t * p; }
};

Deck tiny(const Layout& l, long steps, const std::vector<std::string>& extra = {}) {
  std::vector<std::string> o = {"train.steps=" + std::to_string(steps), "parallel.d=" + std::to_string(l.d),
                                "parallel.c=" + std::to_string(l.c), "parallel.t=" + std::to_string(l.t),
                                "parallel.zero=" + std::to_string(l.zero), "train.recompute=" + l.recompute,
                                "parallel.p=" + std::to_string(l.p), "train.accumulation=" + std::to_string(l.p),
                                "train.micro_batch=" + std::to_string(kGlobalBatch / l.d / l.p)};
  o.insert(o.end(), extra.begin(), extra.end());
  return load_deck(kTiny, o);
}
}  // namespace

TEST_CASE("layout invariance: c = 2, c = 4, c2 x t2, c2 x d2 at ZeRO 1 and 3, c2 x p2", "[cp][mpi]") {
  REQUIRE(test::world_size() == 4);
  const std::vector<Layout> layouts = {{1, 2}, {1, 4}, {1, 2, 2}, {2, 2, 1, 1}, {2, 2, 1, 3}, {1, 2, 1, 0, "none", 2}};
  for (const auto& cfg : test::configs()) {
    train::Trainer ref(tiny(Layout{}, 10, cfg.overrides), MPI_COMM_SELF);
    ref.run();
    for (const auto& l : layouts) {
      Group g(l.ranks());
      train::Trainer tr(tiny(l, 10, cfg.overrides), g.comm);
      tr.run();
      test::check_invariant(ref, tr, l.name(), cfg.name);
    }
  }
}

TEST_CASE("cp bytes of a step equal the analytic K/V bill; blocks per rank", "[cp][mpi][bytes][balance]") {
  // Per layer and micro-batch, a block is K and V of the rank's T/c tokens of B
  // sequences and its H/t heads: 2 * B * (T/c) * (D/t) * 4 bytes. The forward shifts
  // c-1 of them; the backward c-1 K/V blocks again and c-1 dK/dV blocks; selective
  // recomputation reruns the forward's c-1 in the backward.
  for (const Layout& l : {Layout{1, 2}, Layout{1, 4}, Layout{1, 2, 2}, Layout{1, 2, 1, 0, "selective"}}) {
    Group g(l.ranks());
    comm::accounts().clear();
    train::Trainer tr(tiny(l, 1), g.comm);
    tr.run();
    const auto& m = tr.deck().model;
    const double block = 2.0 * kGlobalBatch * (m.seq / l.c) * (m.d_model / l.t) * sizeof(float);
    const double hops = (l.recompute == "selective" ? 4 : 3) * (l.c - 1) * m.layers;
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
    train::Trainer ref(tiny(Layout{}, 3), MPI_COMM_SELF);
    ref.run();
    Group g(4);
    train::Trainer tr(tiny({1, 4}, 3), g.comm);
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
  for (const Layout& l : {Layout{1, 2}, Layout{1, 4}, Layout{1, 2, 2}, Layout{1, 2, 1, 0, "selective"},
                          Layout{1, 2, 2, 0, "full"}, Layout{1, 4, 1, 0, "full"}}) {
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
  const long steps = 6, cut = 3;
  const std::string base = test::fresh_dir("cp_reshard");
  train::Trainer straight(tiny(Layout{}, steps), MPI_COMM_SELF);
  straight.run();
  const auto want_sums = test::checksums_at_cut(tiny(Layout{}, steps), cut);
  const std::string saved = base + "/saved";
  test::save_at_cut(test::with_checkpoint_dir(tiny({1, 2, 1, 1}, steps), saved), 2, cut);
  for (const Layout& l : {Layout{}, Layout{1, 4}}) {
    Group g(l.ranks());
    const std::string dir = test::copy_for_group(saved, base, "c" + std::to_string(l.c), g, l.ranks());
    train::Trainer tr(test::with_checkpoint_dir(tiny(l, steps), dir), g.comm);
    tr.resume("latest");
    INFO(l.name());
    CHECK(world_max(test::checksum_difference(want_sums, tr)) <= 1e-5);
    tr.run();
    const double worst = world_max(test::resumed_loss_difference(straight, tr, cut));
    CHECK(worst <= 1e-5);
    if (world_rank() == 0) std::printf("saved at c=2, resumed at %s: worst relative loss difference %.3g\n",
                                       l.name().c_str(), worst);
  }
}
