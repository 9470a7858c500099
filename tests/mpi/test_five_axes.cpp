// SPDX-License-Identifier: BSD-3-Clause
// All five axes at once, under mpiexec -n 16, on inputs/five-axes.yaml (a tiny MoE
// model; t2 p2 c2 e2, d1, virtual nodes of 4 ranks):
//   * the 5-D layout and each 4-axis subset (one axis back to 1, 8 ranks, two subsets
//     side by side) match the single-rank run through the shared oracle
//     (tests/mpi/invariance.hpp), in both configurations;
//   * in every one of those runs the bytes per step of each axis equal the planner's
//     (plan/axis_traffic.hpp) on every rank; the expert all-to-alls, whose per-rank
//     share follows the router, equal it as a mean over the ranks;
//   * the training state per rank equals the planner's (plan::stage_memory), the
//     planner's parameter split equals the model's, and the activations stay within
//     the stated bound of the planner's formulas;
//   * a checkpoint saved in the 5-D layout resumes on 1 rank and on d = 2 with the
//     losses of the uninterrupted run.
#include <mpi.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "mini5d/core/deck.hpp"
#include "mini5d/plan/axis_traffic.hpp"
#include "mini5d/plan/memory_model.hpp"
#include "mini5d/train/deck_plan.hpp"
#include "mini5d/train/param_checksum.hpp"
#include "mini5d/train/trainer.hpp"
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
const Layout kFive("t2 p2 c2 e2");
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
  for (const auto& a : tr.traffic_summary()) {
    if (a.axis == "e")
      e_mean = a.mean_predicted > 0 ? std::abs(a.mean_measured - a.mean_predicted) / a.mean_predicted
                                    : (a.mean_measured == 0 ? 0.0 : HUGE_VAL);
    else
      worst = test::worse(worst, a.worst);
  }
  worst = world_max(worst);
  e_mean = world_max(e_mean);
  INFO(what << ": worst relative difference of t, c, p, d " << worst << ", of e's mean " << e_mean);
  CHECK(tr.traffic_summary().size() == 6);
  CHECK(worst == 0);
  CHECK(e_mean <= 1e-12);
}
}  // namespace

TEST_CASE("five axes and every four-axis subset match one rank; bytes per axis equal the planner's",
          "[five][mpi]") {
  REQUIRE(test::world_size() == 16);
  // The subsets run two at a time, one per half of the world.
  const std::vector<std::pair<Layout, Layout>> pairs = {{"p2 c2 e2", "t2 c2 e2"}, {"t2 p2 e2", "t2 p2 c2"}};
  for (const auto& cfg : test::configs()) {
    train::Trainer ref(five_axes(Layout{}, 3, cfg.overrides), MPI_COMM_SELF);
    ref.run();
    {
      Group g(16);
      train::Trainer tr(five_axes(kFive, 3, cfg.overrides), g.comm);
      tr.run();
      test::check_invariant(ref, tr, kFive.name(), cfg.name, kTolerance);
      check_traffic(tr, kFive.name());
    }
    for (const auto& [a, b] : pairs) {
      Group g(8);
      const Layout& mine = g.index == 0 ? a : b;
      train::Trainer tr(five_axes(mine, 3, cfg.overrides), g.comm);
      tr.run();
      test::check_invariant(ref, tr, a.name() + " | " + b.name(), cfg.name, kTolerance);
      check_traffic(tr, mine.name());
    }
  }
}

TEST_CASE("five axes: the training state per rank is the planner's, activations within the bound",
          "[five][mpi][memory]") {
  Group g(16);
  train::Trainer tr(five_axes(kFive, 1), g.comm);
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
  double worst = std::max({std::abs(got.weights - want.weights), std::abs(got.gradients - want.grads),
                           std::abs(got.optimizer - want.optimizer)});
  worst = world_max(worst);
  INFO("weights " << got.weights << " / " << want.weights << ", gradients " << got.gradients << " / " << want.grads
                  << ", optimizer " << got.optimizer << " / " << want.optimizer);
  CHECK(worst == 0);
  // Activations: before the first step the model holds its fixed buffers, the planner's
  // figure without the MoE layers' routed rows, to the byte.
  const plan::ActShape shape = plan::act_shape(md, pl, plan::Precision::fp32);
  const auto blocks = plan::stage_blocks(md, pl, stage, d.model.moe_every);
  const double in_flight = plan::in_flight_microbatches(pl.schedule, pl.p, pl.accumulation, pl.virtual_stages, stage);
  const double routed_want = in_flight * blocks.moe * plan::moe_routed_bytes(shape);
  const double kept_want = want.activations - routed_want;
  const double kept_got = tr.measured_activation_memory().activations;
  CHECK(world_max(std::abs(kept_got - kept_want)) == 0);
  // After a step the routed rows are allocated. How many a rank receives follows the
  // router (the planner assumes a balanced one); the runtime grows a buffer to the most
  // rows a micro-batch brought, with 25% headroom, and a rank can receive at most every
  // row its e x t group routes: the bound is kept + 1.25 * e * t * routed.
  tr.run();
  const double got_all = tr.measured_activation_memory().activations;
  const double low = kept_want, high = kept_want + 1.25 * pl.e * pl.t * routed_want;
  INFO("activations " << got_all << " in [" << low << ", " << high << "], planner " << want.activations);
  CHECK(test::all_ranks(got_all > low && got_all <= high));
  if (world_rank() == 0)
    std::printf("five axes, stage %d: state predicted = measured (%.0f + %.0f + %.0f bytes); activations before a "
                "step %.0f = planner; after %.0f (planner %.0f, bound %.0f)\n",
                stage, got.weights, got.gradients, got.optimizer, kept_got, got_all, want.activations, high);
}

TEST_CASE("a checkpoint saved in five axes resumes on 1 rank and on d = 2", "[five][mpi][checkpoint]") {
  const long steps = 4, cut = 2;
  const std::string base = test::fresh_dir("five_axes_ckpt");
  const std::vector<std::string> keep = {"checkpoint.dir=" + base, "checkpoint.keep=0", "checkpoint.at_end=false"};
  // The uninterrupted run, where a resume will need it (ranks 0 and 1).
  train::Trainer straight(five_axes(Layout{}, world_rank() < 2 ? steps : 0), MPI_COMM_SELF);
  straight.run();
  {
    Group g(16);
    train::Trainer first(five_axes(kFive, steps, keep), g.comm);
    first.run({}, {}, cut);
    first.save("test");
  }
  test::idle_barrier();
  // The resumes run on the first ranks only (the others would repeat the same work).
  for (const Layout& l : {Layout(), Layout("d2")}) {
    Group g(l.ranks());
    double worst = 0;
    if (g.index == 0) {
      train::Trainer tr(five_axes(l, steps, keep), g.comm);
      tr.resume("latest");
      tr.run();
      worst = test::resumed_loss_difference(straight, tr, cut);
    }
    test::idle_barrier();
    worst = world_max(worst);
    INFO("resumed on " << l.name());
    CHECK(worst <= 1e-5);
    if (world_rank() == 0)
      std::printf("five axes saved, resumed on %s: worst relative loss difference %.3g\n", l.name().c_str(), worst);
  }
}
