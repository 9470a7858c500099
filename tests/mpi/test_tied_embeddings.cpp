// SPDX-License-Identifier: BSD-3-Clause
// Tied embeddings (model.tie_embeddings=true) through the trainer, on 4 ranks: the LM head
// multiplies by wte (one rank holds both) or by the last pipeline stage's copy of it,
// whose gradient the two ends of the pipeline sum every step (parallel/pp/tied_embedding.hpp).
//   * layout invariance against one rank (tests/mpi/invariance.hpp) at p2, t2, d2 (ZeRO 1),
//     d2 x p2 (ZeRO 1) and t2 x p2, in both configurations, with a padded vocabulary;
//     and with interleaved stages (p2 v2: wte on the first chunk of stage 0, the head on
//     the last chunk of stage 1), context parallelism (c2, c2 x p2: the tied gradient
//     summed over the c ranks too) and experts (moe-tiny at e2 and e2 x p2);
//   * the two copies bit-identical after training with sharded moments (ZeRO 1);
//   * the p axis's bytes (the boundary activations and the tie all-reduce) and every
//     other axis's equal the planner's, and the training state per rank equals its
//     memory model (the last stage's copy included, no LM head at p = 1);
//   * a checkpoint saved at p2 resumes on one rank, and one saved on one rank at d2 x p2:
//     the file holds the tied matrix once.
#include <mpi.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "mini5d/core/error.hpp"
#include "mini5d/plan/cost/memory_model.hpp"
#include "mini5d/train/deck_plan.hpp"
#include "mini5d/train/trainer.hpp"
#include "invariance_check.hpp"
#include "layouts.hpp"
#include "mpi_util.hpp"
#include "reshard_check.hpp"

using namespace mini5d;
using test::Group;
using test::Layout;

namespace {
// Tied, with the vocabulary of 16 padded to 18 at t = 2 (a multiple of 3 x t): the last
// tensor rank's rows of wte end in padding, which must never be a target.
const std::vector<std::string> kTied = {"model.tie_embeddings=true", "model.vocab_pad_to=3"};

// Two micro-batches, two blocks, 1F1B, ZeRO 0 unless the spec says otherwise.
Layout tied_layout(const char* spec) {
  Layout l(spec);
  l.m = 2, l.layers = 2, l.v = 1, l.schedule = "1f1b";
  if (l.zero < 0) l.zero = 0;
  return l;
}

Deck tied(const Layout& l, long steps, std::vector<std::string> extra = {}) {
  extra.insert(extra.begin(), kTied.begin(), kTied.end());
  return test::tiny(l, steps, extra);
}
Deck tied_moe(const Layout& l, long steps, std::vector<std::string> extra = {}) {
  extra.insert(extra.begin(), kTied.begin(), kTied.end());
  return test::moe_tiny(l, steps, extra);
}

// This rank's wte (or the last stage's copy), on the host.
std::vector<float> wte_of(const train::Trainer& tr) {
  const auto& t = tr.model().layout().at("wte");
  const auto all = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), tr.model().params);
  return std::vector<float>(all.data() + t.offset, all.data() + t.offset + t.size());
}

// With p > 1: the ends of the pipeline hold the same wte, bit for bit, after training.
void check_copies(const train::Trainer& tr, const Layout& l, const std::string& config) {
  if (l.p == 1) return;
  const int stage = tr.grid().coord(grid::Axis::p);
  bool same = true;
  if (stage == 0 || stage == l.p - 1) {
    const std::vector<float> mine = wte_of(tr);
    std::vector<float> other(mine.size());
    const int peer = stage == 0 ? l.p - 1 : 0;
    MPI_Sendrecv(mine.data(), int(mine.size()), MPI_FLOAT, peer, 0, other.data(), int(other.size()), MPI_FLOAT, peer,
                 0, tr.grid().axis(grid::Axis::p).get(), MPI_STATUS_IGNORE);
    same = mine == other;
  }
  INFO(l.name() << ", " << config << ": the copies of wte are identical");
  CHECK(test::all_ranks(same));
}
}  // namespace

// Trains each layout with `deck` and checks it against `ref` (the same deck on one
// rank, already run), and the pipeline's ends' copies of wte.
template <class MakeDeck>
void check_layouts(const test::Reference& ref, const std::vector<Layout>& layouts, const MakeDeck& deck,
                   const std::string& config) {
  for (const auto& l : layouts)
    test::on_first_group(l.ranks(), [&](MPI_Comm group) {
      train::Trainer tr(deck(l), group);
      tr.run();
      test::check_invariant(ref, tr, l.name(), config);
      check_copies(tr, l, config);
    });
}

TEST_CASE("tied embeddings: layout invariance at p2, t2, d2, d2 x p2 and t2 x p2", "[tie][mpi]") {
  const Layout one = tied_layout("");
  const std::vector<Layout> layouts = {tied_layout("p2"), tied_layout("t2"), tied_layout("d2 zero1"),
                                       tied_layout("d2 p2 zero1"), tied_layout("t2 p2")};
  for (const auto& c : test::configs()) {
    const test::Reference ref = test::Reference::run(tied(one, 3, c.overrides));
    // One tensor for the embedding and the head: no LM head anywhere.
    CHECK(ref.checksums().count("lm_head.weight") == 0);
    check_layouts(ref, layouts, [&](const Layout& l) { return tied(l, 3, c.overrides); }, c.name);
  }
}

TEST_CASE("tied embeddings: invariance with interleaved stages, context parallelism and experts", "[tie][mpi]") {
  Layout interleaved = tied_layout("p2");
  interleaved.v = 2, interleaved.layers = 4, interleaved.schedule = "interleaved";
  Layout one = tied_layout(""), one4 = one;
  one4.layers = 4;  // the interleaved layout has four blocks: so has its reference
  for (const auto& c : test::configs()) {
    auto dense = [&](const Layout& l) { return tied(l, 3, c.overrides); };
    auto moe = [&](const Layout& l) { return tied_moe(l, 3, c.overrides); };
    // One reference run per deck, each checked against the layouts of that deck.
    const test::Reference ref = test::Reference::run(dense(one)), ref4 = test::Reference::run(dense(one4)),
                          ref_moe = test::Reference::run(moe(one));
    check_layouts(ref4, {interleaved}, dense, c.name);
    check_layouts(ref, {tied_layout("c2"), tied_layout("c2 p2")}, dense, c.name);
    check_layouts(ref_moe, {tied_layout("e2"), tied_layout("e2 p2")}, moe, c.name);
  }
}

TEST_CASE("tied embeddings: bytes per axis and training state equal the planner's", "[tie][mpi]") {
  for (const char* spec : {"d2 p2 zero1", "t2 p2", "d2 zero1"}) {
    const Layout l = tied_layout(spec);
    Group g(l.ranks());
    train::Trainer tr(tied(l, 2), g.comm);
    // The state per rank before the first step (one trainer alive: the ledger is its own).
    const Deck& d = tr.deck();
    const plan::ModelDesc md = train::plan_model(d);
    const plan::Layout pl = train::plan_layout(d);
    const int stage = tr.grid().coord(grid::Axis::p);
    const plan::ShardParams sp = plan::stage_params(md, pl, stage);
    const auto& layout = tr.model().layout();
    plan::TrainDesc td;
    td.global_batch = test::kGlobalBatch;
    const plan::MemoryBreakdown want = plan::stage_memory(md, td, plan::ClusterDesc{}, pl, stage, {});
    const auto got = tr.measured_state_memory();
    INFO(l.name() << ": weights " << got.weights << " / " << want.weights << ", gradients " << got.gradients << " / "
                  << want.grads << ", optimizer " << got.optimizer << " / " << want.optimizer);
    CHECK(test::all_ranks(sp.dense == double(layout.total())));
    CHECK(test::all_ranks(got.weights == want.weights && got.gradients == want.grads &&
                          got.optimizer == want.optimizer));
    tr.run();
    double worst = 0, p_bytes = 0;
    for (const auto& a : tr.record().traffic) {
      if (a.axis != "e") worst = test::worse(worst, a.worst);
      if (a.axis == "p") p_bytes = a.measured;
    }
    // The tie all-reduce is there: the p axis carries more than the boundary activations.
    const double tokens = double(test::kGlobalBatch / l.d / l.accumulation()) * d.model.seq;
    const double rows = d.parallel.sp && l.t > 1 ? tokens / l.t : tokens;
    const double activations = l.p > 1 ? 2.0 * l.accumulation() * rows * d.model.d_model * sizeof(float) : 0.0;
    const double tie = l.p > 1 ? 18.0 / l.t * d.model.d_model * sizeof(float) : 0.0;
    INFO(l.name() << ": worst relative difference of the bytes per axis " << worst << ", p bytes " << p_bytes
                  << ", want " << activations + tie);
    CHECK(test::world_max(worst) == 0);
    CHECK(test::all_ranks(p_bytes == activations + tie));
  }
}

TEST_CASE("tied embeddings: a checkpoint saved at p2 resumes on one rank, and one saved on one rank at d2 x p2",
          "[tie][mpi][checkpoint]") {
  const Layout one = tied_layout("");
  const std::string deck = test::input_deck("tiny.yaml");
  test::check_reshard(deck, one, tied_layout("p2"), {one, tied_layout("t2")}, 4, 2, "tie_reshard_p2", kTied);
  test::check_reshard(deck, one, one, {tied_layout("d2 p2 zero1")}, 4, 2, "tie_reshard_one", kTied);
}

TEST_CASE("tied embeddings: the trainer refuses ZeRO 2 and 3 in one line naming both fields", "[tie][mpi]") {
  for (const char* spec : {"d2 zero2", "d2 p2 zero3"}) {
    const Layout l = tied_layout(spec);
    Group g(l.ranks());
    const std::string want = "model.tie_embeddings=true with parallel.zero=" + std::to_string(l.zero) +
                             ": not implemented in this build (supported: parallel.zero 0 or 1 with tied embeddings)";
    CHECK_THROWS_WITH(train::Trainer(tied(l, 1), g.comm), Catch::Matchers::Contains(want));
  }
}
