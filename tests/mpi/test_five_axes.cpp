// SPDX-License-Identifier: BSD-3-Clause
// All five axes at once, data parallelism (and ZeRO) included, under mpiexec -n 32, on
// inputs/five-axes.yaml (a tiny MoE model) at d2 t2 p2 c2 e2 in virtual nodes of 4 ranks:
//   * the 5-D layout at ZeRO 3, 2 and 1, each in both configurations, matches the
//     single-rank run through the shared oracle (tests/mpi/invariance.hpp);
//   * in every one of those runs the bytes per step of each axis equal the planner's
//     (plan/cost/axis_traffic.hpp) on every rank, ZeRO 3's gathers and ZeRO 2-3's per-rank
//     sums over t included; the expert all-to-alls, whose per-rank share follows the
//     router, equal it as a mean over the ranks;
//   * the training state per rank equals the planner's (plan::stage_memory) at ZeRO 1,
//     2 and 3, the planner's parameter split equals the model's, and the activations stay
//     within the stated bound of the planner's formulas;
//   * a checkpoint saved in 5-D at ZeRO 1 resumes on 1 rank and on the 5-D layout at
//     ZeRO 3, whose shards cut every unit differently (an MoE model needs SP at t > 1):
//     the parameters read back equal the single-rank run's at the cut, and the losses
//     after it the uninterrupted run's.
#include <mpi.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "mini5d/core/deck.hpp"
#include "mini5d/plan/cost/axis_traffic.hpp"
#include "mini5d/plan/cost/memory_model.hpp"
#include "mini5d/train/deck_plan.hpp"
#include "mini5d/train/param_checksum.hpp"
#include "mini5d/train/trainer.hpp"
#include "compare.hpp"
#include "invariance_check.hpp"
#include "layouts.hpp"
#include "mpi_util.hpp"
#include "reshard.hpp"

using namespace mini5d;
namespace fs = std::filesystem;
using test::Group;
using test::kGlobalBatch;
using test::Layout;
using test::world_max;
using test::world_rank;

namespace {
constexpr int kAccumulation = 2;  // micro-batches per step in every layout, p = 1 too
constexpr long kSteps = 2;        // steps of each invariance run
const Layout kFive("d2 t2 p2 c2 e2");
// The shared bounds, but for the parameters' sums of squares: with experts, more
// zero-initialised tensors have gradients that are partly rounding noise (the key bias,
// whose gradient is exactly zero; expert biases of experts few tokens reach), which
// AdamW turns into full-size steps of either sign. Measured: <= 9.6e-6 (loss <= 2.2e-7).
const test::Tolerance kTolerance{1e-5, 1e-5, 1e-2, 5e-5};

Deck five_axes(Layout l, long steps, const std::vector<std::string>& extra = {}) {
  l.m = kAccumulation;
  std::vector<std::string> o = {"output.trace=", "output.report="};
  o.insert(o.end(), extra.begin(), extra.end());
  return test::layout_deck(test::input_deck("five-axes.yaml"), l, steps, o);
}

// Every axis's bytes per step equal the planner's on every rank of the run (the expert
// all-to-alls: as the mean over the ranks). Collective over the world.
void check_traffic(const train::Trainer& tr, const std::string& what) {
  double worst = 0, e_mean = 0;
  for (const auto& a : tr.record().traffic) {
    if (a.axis == "e")
      e_mean = a.mean_predicted > 0 ? std::abs(a.mean_measured - a.mean_predicted) / a.mean_predicted
                                    : (a.mean_measured == 0 ? 0.0 : HUGE_VAL);
    else
      worst = test::worse(worst, a.worst);
  }
  worst = world_max(worst);
  e_mean = world_max(e_mean);
  INFO(what << ": worst relative difference of t, c, p, d " << worst << ", of e's mean " << e_mean);
  CHECK(tr.record().traffic.size() == 6);
  CHECK(worst == 0);
  CHECK(e_mean <= 1e-12);
}

// Before the first step: the planner's split of the stage's parameters is the model's,
// and the training state per rank and the fixed activation buffers are the planner's
// (plan::stage_memory). Returns what the activations after a step are held to.
// Collective over the world.
struct AfterStep {
  double low = 0, high = 0, planner = 0, kept = 0;
};
AfterStep check_memory_before_step(const train::Trainer& tr) {
  const Deck& d = tr.deck();
  const plan::ModelDesc md = train::plan_model(d);
  const plan::Layout pl = train::plan_layout(d);
  const int stage = tr.grid().coord(grid::Axis::p);
  // The planner's split of the stage's parameters is the model's, element for element.
  const plan::ShardParams sp = plan::stage_params(md, pl, stage);
  const auto& layout = tr.model().layout();
  CHECK(sp.expert == double(layout.expert_total()));
  CHECK(sp.dense == double(layout.total() - layout.expert_total()));
  // States: the planner's bytes, but for ZeRO rounding (a group that does not divide a
  // unit gives some ranks one element more; none here: the check is exact).
  plan::TrainDesc td;
  td.global_batch = kGlobalBatch;
  plan::ClusterDesc cl;
  const plan::MemoryBreakdown want = plan::stage_memory(md, td, cl, pl, stage, {});
  const auto got = tr.measured_state_memory();
  double worst = test::worst_of({test::abs_error(got.weights, want.weights), test::abs_error(got.gradients, want.grads),
                                 test::abs_error(got.optimizer, want.optimizer)});
  worst = world_max(worst);
  INFO("weights " << got.weights << " / " << want.weights << ", gradients " << got.gradients << " / " << want.grads
                  << ", optimizer " << got.optimizer << " / " << want.optimizer);
  CHECK(worst == 0);
  // Activations: before the first step the model holds its fixed buffers, the planner's
  // figure without the MoE layers' routed rows, to the byte.
  const plan::ActShape shape = plan::act_shape(md, pl, Precision::fp32);
  const auto blocks = plan::stage_blocks(md, pl, stage, d.model.moe_every);
  const double in_flight = plan::in_flight_microbatches(pl.schedule, pl.p, pl.accumulation, pl.virtual_stages, stage);
  const double routed_want = in_flight * blocks.moe * plan::moe_routed_bytes(shape);
  const double kept_want = want.activations - routed_want;
  const double kept_got = tr.measured_activation_memory().activations;
  CHECK(world_max(std::abs(kept_got - kept_want)) == 0);
  if (world_rank() == 0)
    std::printf("five axes, ZeRO %d, stage %d: state predicted = measured (%.0f + %.0f + %.0f bytes); activations "
                "before a step %.0f = planner\n",
                pl.zero, stage, got.weights, got.gradients, got.optimizer, kept_got);
  // After a step the routed rows are allocated. How many a rank receives follows the
  // router (the planner assumes a balanced one); the runtime grows a buffer to the most
  // rows a micro-batch brought, with 25% headroom, and a rank can receive at most every
  // row its e x t group routes: the bound is kept + 1.25 * e * t * routed.
  return {kept_want, kept_want + 1.25 * pl.e * pl.t * routed_want, want.activations, kept_got};
}

void check_memory_after_step(const train::Trainer& tr, const AfterStep& b) {
  const double got_all = tr.measured_activation_memory().activations;
  INFO("activations " << got_all << " in [" << b.low << ", " << b.high << "], planner " << b.planner);
  CHECK(test::all_ranks(got_all > b.low && got_all <= b.high));
  if (world_rank() == 0)
    std::printf("five axes: activations after a step %.0f (planner %.0f, bound %.0f)\n", got_all, b.planner, b.high);
}
}  // namespace


TEST_CASE("five axes at ZeRO 3, 2 and 1 match one rank; bytes per axis and memory equal the planner's",
          "[five][mpi]") {
  REQUIRE(test::world_size() == 32);
  // Each configuration (clipping on; clipping off with weight decay) at ZeRO 3, 2 and 1:
  // six 5-D runs of 2 steps (the second step's update reads the AdamW moments and, at
  // ZeRO 2-3, the shards the first left: a third adds no path, and each 5-D step costs
  // seconds on 2 cores, where every 32-rank collective waits for 16 ranks a core); the
  // 4-axis subsets are left to the axis tests. One single-rank reference per
  // configuration serves the three ZeRO stages (it has none); it holds figures only, so
  // the memory ledger, which counts live allocations, sees the 5-D run's alone.
  for (const auto& cfg : test::configs()) {
    const test::Reference ref = test::Reference::run(five_axes(Layout{}, kSteps, cfg.overrides));
    for (const int zero : {3, 2, 1}) {
      Layout l = kFive;
      l.zero = zero;
      Group g(32);
      train::Trainer tr(five_axes(l, kSteps, cfg.overrides), g.comm);
      const AfterStep bounds = check_memory_before_step(tr);
      tr.run();
      check_memory_after_step(tr, bounds);
      check_traffic(tr, l.name());
      test::check_invariant(ref, tr, l.name(), cfg.name, kTolerance);
    }
  }
}

TEST_CASE("a checkpoint saved in five axes resumes on 1 rank and on another 5-D layout", "[five][mpi][checkpoint]") {
  // Two steps before the cut (the saved moments are a step's own and a carried one), one
  // after: the resumed step reads every restored tensor.
  const long steps = 3, cut = 2;
  const std::string base = test::fresh_dir("five_axes_ckpt");
  const std::vector<std::string> keep = {"checkpoint.dir=" + base, "checkpoint.keep=0", "checkpoint.at_end=false"};
  // The uninterrupted run and its parameters at the cut, where the checks need them
  // (rank 0, which resumes on its own and is rank 0 of the 5-D resume).
  const bool checker = world_rank() == 0;
  train::Trainer straight(five_axes(Layout{}, checker ? steps : 0), MPI_COMM_SELF);
  straight.run();
  const auto at_cut = checker ? test::checksums_at_cut(five_axes(Layout{}, steps), cut)
                              : std::map<std::string, train::TensorChecksum>{};
  Layout saved = kFive;
  saved.zero = 1;
  test::save_at_cut(five_axes(saved, steps, keep), 32, cut);
  // One after the other, so one folder serves both: neither resumed run saves.
  for (const Layout& l : {Layout(), Layout("d2 t2 p2 c2 e2 zero3")}) {
    Group g(l.ranks());
    double loss = 0, sums = 0;
    if (g.index == 0) {
      train::Trainer tr(five_axes(l, steps, keep), g.comm);
      tr.resume("latest");
      const double s = test::checksum_difference(at_cut, tr);  // collective over the group
      if (checker) sums = s;
      tr.run();
      loss = test::resumed_loss_difference(straight.record().history, tr, cut);
      if (!checker) loss = 0;  // only rank 0 ran the uninterrupted run
    }
    test::idle_barrier();
    loss = world_max(loss);
    sums = world_max(sums);
    INFO("saved on " << saved.name() << ", resumed on " << l.name());
    // The saved parameters are the 5-D run's, within the oracle's bound of one rank's.
    CHECK(sums <= kTolerance.sum_sq);
    CHECK(loss <= kTolerance.loss);
    if (world_rank() == 0)
      std::printf("five axes saved on %s, resumed on %s: parameters at the cut %.3g, losses after it %.3g (worst "
                  "relative difference)\n",
                  saved.name().c_str(), l.name().c_str(), sums, loss);
  }
}
