// SPDX-License-Identifier: BSD-3-Clause
// Tensor and sequence parallelism through the trainer, under mpiexec -n 4
// (docs/parallelism.md): layout invariance against the single-rank run (losses and pre-clip gradient
// norms, step by step, on the tiny deck as it is and with clipping off and weight decay
// on), for t = 2 and 4 with SP on and off, d2 x t2 at ZeRO 0-3, and recompute
// selective and full at t = 1 and 2; the tp bytes of a step against the analytic bill;
// the activation memory the model allocates against the planner's formulas; and a
// checkpoint saved at d2 x t2 resumed at t = 1, t = 4 and d = 4.
#include <mpi.h>

#include <catch2/catch.hpp>
#include <cmath>
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
  int d = 1, t = 1, zero = 0;
  bool sp = true;
  std::string recompute = "none";
  std::string name() const {
    return "d" + std::to_string(d) + " t" + std::to_string(t) + (t > 1 ? (sp ? " sp" : " nosp") : "") + " zero" +
           std::to_string(zero) + " recompute " + recompute;
  }
  int ranks() const { return d * t; }
};

Deck tiny(const Layout& l, long steps, const std::vector<std::string>& extra = {}) {
  std::vector<std::string> o = {"train.steps=" + std::to_string(steps), "parallel.d=" + std::to_string(l.d),
                                "parallel.t=" + std::to_string(l.t), "parallel.zero=" + std::to_string(l.zero),
                                "parallel.sp=" + std::string(l.sp ? "true" : "false"),
                                "train.recompute=" + l.recompute,
                                "train.micro_batch=" + std::to_string(kGlobalBatch / l.d)};
  o.insert(o.end(), extra.begin(), extra.end());
  return load_deck(kTiny, o);
}

// Runs each layout (on groups of its rank count) and compares it with one rank.
void check_invariance(const std::vector<Layout>& layouts, long steps) {
  // The shared oracle (tests/mpi/invariance.hpp) with its bounds, as for data
  // parallelism: the ranks sum partial products in another order than one rank (fp32
  // rounding); a layout bug (a lost or doubled shard, a missing reduction) is far above.
  for (const auto& c : test::configs()) {
    train::Trainer ref(tiny(Layout{}, steps, c.overrides), MPI_COMM_SELF);
    ref.run();
    for (const auto& l : layouts) {
      Group g(l.ranks());
      train::Trainer tr(tiny(l, steps, c.overrides), g.comm);
      tr.run();
      test::check_invariant(ref, tr, l.name(), c.name);
    }
  }
}
}  // namespace

TEST_CASE("layout invariance: t = 2 and 4, SP on and off, d2 x t2 at ZeRO 0-3", "[tp][mpi]") {
  REQUIRE(test::world_size() == 4);
  std::vector<Layout> layouts;
  for (int t : {2, 4})
    for (bool sp : {true, false}) layouts.push_back({1, t, 0, sp});
  for (int zero = 0; zero <= 3; ++zero) layouts.push_back({2, 2, zero, true});
  check_invariance(layouts, 10);
}

TEST_CASE("layout invariance: recompute selective and full at t = 1 and 2", "[tp][mpi][recompute]") {
  std::vector<Layout> layouts;
  for (const char* r : {"selective", "full"}) {
    layouts.push_back({1, 1, 0, true, r});
    layouts.push_back({1, 2, 0, true, r});
    layouts.push_back({1, 2, 0, false, r});
  }
  check_invariance(layouts, 10);
}

TEST_CASE("tp bytes of a step equal the analytic bill", "[tp][mpi]") {
  // One micro-batch, N = B*T token rows, D = d_model, L blocks, 4-byte floats.
  //  without SP: an all-reduce of [N, D] after the embedding lookup, after each of
  //    a block's two row-parallel layers (forward) and of dx under each of its two
  //    column-parallel layers (backward: QKV, fc), and of dx under the LM head;
  //  with SP: the same payloads as reduce-scatters (forward: embedding, the two
  //    row-parallel layers) and all-gathers (forward: before QKV, fc and the LM head;
  //    backward: dy of the two row-parallel layers, dx of the embedding); the backward of
  //    a column-parallel layer all-gathers its input again (its rows are all that was
  //    kept) and reduce-scatters dx: 10 [N, D] payloads per block instead of 4;
  //  the vocab-parallel loss: every rank's N row maxima gathered (t*N) and an
  //    all-reduce of 2N sums;
  //  gradients (SP only): one all-reduce of every replicated tensor per step.
  for (bool sp : {false, true}) {
    Group g(2);
    comm::accounts().clear();
    const Layout l{1, 2, 0, sp};
    train::Trainer tr(tiny(l, 1), g.comm);
    tr.run();
    const auto& m = tr.deck().model;
    const double N = double(kGlobalBatch) * m.seq, D = m.d_model, L = m.layers, f = sizeof(float), t = 2;
    const double nd = N * D * f, loss = (t * N + 2 * N) * f;
    const double want = sp ? (1 + 10 * L + 1 + 2 + 1) * nd + loss : (1 + 4 * L + 1) * nd + loss;
    const double got = comm::accounts().bytes("tp", comm::Traffic::activations);
    double replicated = 0;
    for (const auto& ts : tr.model().layout().tensors())
      if (ts.replicated) replicated += double(ts.size()) * f;
    const double grads = comm::accounts().bytes("tp", comm::Traffic::grads);
    INFO("sp=" << sp);
    CHECK(got == want);
    CHECK(grads == (sp ? replicated : 0.0));
    CHECK(world_max(std::abs(got - want)) == 0);
  }
}

TEST_CASE("activation memory equals the planner's formulas", "[tp][mpi][memory]") {
  for (int t : {1, 2, 4})
    for (bool sp : {true, false})
      for (const char* r : {"none", "selective", "full"}) {
        if (t == 1 && !sp) continue;
        const Layout l{1, t, 0, sp, r};
        Group g(t);
        train::Trainer tr(tiny(l, 0), g.comm);
        const auto want = tr.predicted_activation_memory(), got = tr.measured_activation_memory();
        INFO(l.name());
        CHECK(got.activations == want.activations);
        CHECK(got.workspace == want.workspace);
      }
}

TEST_CASE("a checkpoint saved at d2 x t2 resumes at t = 1, t = 4 and d = 4", "[tp][mpi][checkpoint]") {
  const long steps = 6, cut = 3;
  const std::string base = test::fresh_dir("tp_reshard");
  train::Trainer straight(tiny(Layout{}, steps), MPI_COMM_SELF);
  straight.run();
  const auto want_sums = test::checksums_at_cut(tiny(Layout{}, steps), cut);
  const std::string saved = base + "/saved";
  test::save_at_cut(test::with_checkpoint_dir(tiny({2, 2, 1, true}, steps), saved), 4, cut);
  for (const Layout& l : {Layout{1, 1, 0}, Layout{1, 4, 0}, Layout{4, 1, 2}}) {
    Group g(l.ranks());
    const std::string dir = test::copy_for_group(saved, base, l.name(), g, l.ranks());
    train::Trainer tr(test::with_checkpoint_dir(tiny(l, steps), dir), g.comm);
    tr.resume("latest");
    // The logical tensors read back are the single-rank ones, whatever the layout.
    CHECK(world_max(test::checksum_difference(want_sums, tr)) <= 1e-5);
    tr.run();
    const double worst = world_max(test::resumed_loss_difference(straight, tr, cut));
    INFO(l.name());
    CHECK(worst <= 1e-5);
    if (world_rank() == 0) std::printf("resume at %s: worst relative loss difference %.3g\n", l.name().c_str(), worst);
  }
}
