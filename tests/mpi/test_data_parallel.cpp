// SPDX-License-Identifier: BSD-3-Clause
// Data parallelism with ZeRO, under mpiexec -n 4. The world is split into groups of
// d = 1, 2 and 4 ranks; each group trains the tiny deck with the same global batch
// (micro_batch 16/d per rank) and is compared with the single-rank run (the oracle of
// DESIGN.md §5). Also: the gradient and weight bytes the DP group moved per step equal
// the analytic bill of each stage exactly, and the weights/gradients/optimizer bytes
// the memory ledger measured equal the prediction exactly.
#include <mpi.h>

#include <catch2/catch.hpp>
#include <cmath>

#include "mini5d/comm/accounts.hpp"
#include "mini5d/core/deck.hpp"
#include "mini5d/core/memory_ledger.hpp"
#include "mini5d/train/trainer.hpp"
#include "mpi_util.hpp"

using namespace mini5d;
using test::Group;
using test::world_max;
using test::world_rank;
using test::world_size;

namespace {
const std::string kTiny = std::string(MINI5D_SOURCE_DIR) + "/inputs/tiny.yaml";
constexpr int kGlobalBatch = 16;

Deck tiny(int d, int zero, int steps, int accumulation = 1) {
  return load_deck(kTiny, {"train.steps=" + std::to_string(steps), "parallel.d=" + std::to_string(d),
                           "parallel.zero=" + std::to_string(zero),
                           "train.micro_batch=" + std::to_string(kGlobalBatch / d / accumulation),
                           "train.accumulation=" + std::to_string(accumulation)});
}

std::vector<double> losses(const train::Trainer& tr) {
  std::vector<double> v;
  for (const auto& s : tr.history()) v.push_back(s.loss);
  return v;
}
}  // namespace

TEST_CASE("layout invariance: d = 1, 2, 4 and ZeRO 0-3 give the single-rank losses", "[dp][mpi]") {
  REQUIRE(world_size() == 4);
  const int steps = 10;
  train::Trainer ref(tiny(1, 0, steps), MPI_COMM_SELF);
  ref.run();
  const auto want = losses(ref);
  // Tolerance: the ranks sum their gradients in another order than one rank
  // accumulates them (fp32 rounding), and AdamW's division by sqrt(v) amplifies
  // last-bit differences of small gradients. Measured here: at most ~1e-8 relative
  // over 10 steps (d=1 is bit-identical). The bound is 1e-5, as the issue asks; a
  // layout bug (a lost or doubled gradient, a wrong shard) shows up at 1e-2 or worse.
  const double tol = 1e-5;
  for (int d : {1, 2, 4}) {
    for (int zero = 0; zero <= 3; ++zero) {
      Group g(d);
      train::Trainer tr(tiny(d, zero, steps), g.comm);
      tr.run();
      const auto got = losses(tr);
      double worst = 0;
      for (int i = 0; i < steps; ++i) worst = std::max(worst, std::abs(got[i] - want[i]) / want[i]);
      worst = world_max(worst);
      INFO("d=" << d << " zero=" << zero << ": worst relative loss difference " << worst);
      CHECK(worst <= tol);
      if (world_rank() == 0)
        std::printf("invariance d=%d zero=%d: worst relative loss difference %.3g\n", d, zero, worst);
    }
  }
}

TEST_CASE("gradient and weight bytes per step equal the analytic bill of each stage", "[dp][mpi]") {
  const int steps = 3;
  // With accumulation the global batch is the same 16 sequences: the losses must also
  // match the single-rank run.
  train::Trainer ref(tiny(1, 0, steps), MPI_COMM_SELF);
  ref.run();
  for (int accumulation : {1, 2}) {
    for (int zero = 0; zero <= 3; ++zero) {
      Group g(4);
      comm::accounts().clear();
      train::Trainer tr(tiny(4, zero, steps, accumulation), g.comm);
      tr.run();
      const auto& layout = tr.model().layout();
      const double P = double(layout.total()), f = sizeof(float);
      const auto& units = layout.units();
      // Gathered again for the backward: every block but the last (the head and the
      // last block are still in the two gather buffers; the embeddings need no weights).
      const double regathered = P - units.front().size - units.back().size - units[units.size() - 2].size;
      // Stage 0-1: one all-reduce of every gradient per step. Stage 2-3: every
      // micro-batch reduce-scatters every gradient. Stage 1-2 gather the updated
      // weights once per step; stage 3 gathers every unit for its forward and the
      // blocks but the last again for their backward, every micro-batch.
      const double per_step_grads = zero <= 1 ? P * f : accumulation * P * f;
      const double per_step_weights = zero == 0 ? 0 : zero <= 2 ? P * f : accumulation * (P + regathered) * f;
      const double grads = comm::accounts().bytes("dp", comm::Traffic::grads);
      const double weights = comm::accounts().bytes("dp", comm::Traffic::weights);
      INFO("zero=" << zero << " accumulation=" << accumulation);
      CHECK(grads == steps * per_step_grads);
      CHECK(weights == steps * per_step_weights);
      CHECK(world_max(std::abs(grads - steps * per_step_grads)) == 0);
      if (zero == 3) {
        // Only the first unit of a micro-batch is gathered on demand; every other
        // gather was started while the unit before it computed.
        const long L = tr.deck().model.layers, micro = long(steps) * accumulation;
        CHECK(tr.optimizer().blocking_gathers() == micro);
        CHECK(tr.optimizer().prefetched_gathers() == micro * 2 * L);
      }
      double worst = 0;
      for (int i = 0; i < steps; ++i)
        worst = std::max(worst, std::abs(tr.history()[i].loss - ref.history()[i].loss) / ref.history()[i].loss);
      CHECK(world_max(worst) <= 1e-5);
    }
  }
}

TEST_CASE("measured weights, gradients and optimizer bytes equal the prediction", "[dp][mpi][memory]") {
  for (int d : {1, 2, 4}) {
    for (int zero = 0; zero <= 3; ++zero) {
      Group g(d);
      train::Trainer tr(tiny(d, zero, 0), g.comm);
      const auto want = tr.predicted_state_memory();
      const auto got = tr.measured_state_memory();
      const double P = double(tr.model().layout().total());
      INFO("d=" << d << " zero=" << zero);
      // The prediction itself: 16 bytes per parameter at stage 0 ...
      if (zero == 0) CHECK(want.weights + want.gradients + want.optimizer == 16 * P);
      // ... and each category divided by the group from its stage on.
      CHECK(want.optimizer == 8 * P / (zero >= 1 ? d : 1));
      CHECK(want.gradients == 4 * P / (zero >= 2 ? d : 1));
      CHECK(want.weights == 4 * P / (zero >= 3 ? d : 1));
      CHECK(got.weights == want.weights);
      CHECK(got.gradients == want.gradients);
      CHECK(got.optimizer == want.optimizer);
    }
  }
}

TEST_CASE("small buckets: more all-reduces, the same bytes and the same losses", "[dp][mpi]") {
  const int steps = 3;
  Group g(4);
  train::Trainer ref(tiny(1, 0, steps), MPI_COMM_SELF);
  ref.run();
  comm::accounts().clear();
  Deck d = tiny(4, 0, steps);
  d.parallel.bucket_mb = 0.01;  // 2621 floats: every block unit splits into many buckets
  train::Trainer tr(d, g.comm);
  tr.run();
  const auto& grads = comm::accounts().axes().at("dp").by_traffic.at("grads");
  const double P = double(tr.model().layout().total());
  const long units = long(tr.model().layout().units().size());
  CHECK(grads.bytes == steps * P * sizeof(float));
  CHECK(grads.calls > steps * units);
  double worst = 0;
  for (int i = 0; i < steps; ++i)
    worst = std::max(worst, std::abs(tr.history()[i].loss - ref.history()[i].loss) / ref.history()[i].loss);
  CHECK(world_max(worst) <= 1e-5);
}
