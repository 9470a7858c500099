// SPDX-License-Identifier: BSD-3-Clause
// Tensor and sequence parallelism through the trainer, under mpiexec -n 4
// (docs/parallelism.md): layout invariance against the single-rank run (losses and pre-clip gradient
// norms, step by step, on the tiny deck as it is and with clipping off and weight decay
// on), for t = 2 and 4 with SP on and off, d2 x t2 at ZeRO 0-3, and recompute
// selective and full at t = 1 and 2, and with model.attention=full (the default core is
// blockwise); the tp bytes of a step against the analytic bill; the activation memory
// the model allocates against the planner's formulas, for both cores; and a
// checkpoint saved at d2 x t2 resumed at t = 1, t = 4 and d = 4; and a vocabulary of 257,
// which t = 2 and 4 pad, through the same oracles (invariance, memory, checkpoints).
#include <mpi.h>

#include <catch2/catch.hpp>
#include <set>
#include <cmath>

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

namespace {
// d data-parallel replicas of t tensor ranks, SP on or off, at ZeRO `zero`.
Layout tp_layout(int d, int t, int zero, bool sp, const std::string& recompute = "none") {
  Layout l;
  l.d = d, l.t = t, l.zero = zero, l.sp = sp, l.recompute = recompute;
  return l;
}

// Runs each layout (on the first ranks of the world) and compares it with one rank, both
// with the deck overrides `extra` on top of each configuration's.
void check_invariance(const std::vector<Layout>& layouts, long steps, const std::vector<std::string>& extra = {}) {
  // The shared oracle (tests/mpi/invariance.hpp) with its bounds, as for data
  // parallelism: the ranks sum partial products in another order than one rank (fp32
  // rounding); a layout bug (a lost or doubled shard, a missing reduction) is far above.
  for (const auto& c : test::configs()) {
    std::vector<std::string> overrides = c.overrides;
    overrides.insert(overrides.end(), extra.begin(), extra.end());
    const test::Reference ref = test::Reference::run(tiny(Layout{}, steps, overrides));
    for (const auto& l : layouts)
      test::on_first_group(l.ranks(), [&](MPI_Comm group) {
        train::Trainer tr(tiny(l, steps, overrides), group);
        tr.run();
        test::check_invariant(ref, tr, l.name(), c.name);
      });
  }
}
}  // namespace

TEST_CASE("layout invariance: t = 2 and 4, SP on and off, d2 x t2 at ZeRO 0-3", "[tp][mpi][threads]") {
  REQUIRE(test::world_size() == 4);
  std::vector<Layout> layouts;
  for (int t : {2, 4})
    for (bool sp : {true, false}) layouts.push_back(tp_layout(1, t, 0, sp));
  for (int zero = 0; zero <= 3; ++zero) layouts.push_back(tp_layout(2, 2, zero, true));
  check_invariance(layouts, 10);
}

TEST_CASE("layout invariance with a padded vocabulary: vocab 257 at t = 2 and 4", "[tp][mpi][vocab]") {
  // t divides no part of 257: each rank holds 258/2 or 260/4 rows (vocab_pad_to 1), or
  // 512/4 with Megatron's 128*t, where the last rank holds padding only. The reference
  // is the unpadded one-rank run.
  check_invariance({tp_layout(1, 2, 0, true), tp_layout(1, 4, 0, false)}, 10, {"model.vocab=257"});
  check_invariance({tp_layout(1, 4, 0, true)}, 10, {"model.vocab=257", "model.vocab_pad_to=0"});
}

TEST_CASE("layout invariance: recompute selective and full at t = 1 and 2", "[tp][mpi][recompute][threads]") {
  std::vector<Layout> layouts;
  for (const char* r : {"selective", "full"}) {
    layouts.push_back(tp_layout(1, 1, 0, true, r));
    layouts.push_back(tp_layout(1, 2, 0, true, r));
    layouts.push_back(tp_layout(1, 2, 0, false, r));
  }
  check_invariance(layouts, 10);
}

TEST_CASE("layout invariance with full attention: t = 2 and 4, selective at t = 2", "[tp][mpi][attention]") {
  // The reference core (model.attention=full, the seq x seq probabilities) against its
  // own one-rank run; the default blockwise core runs in every other case here.
  check_invariance({tp_layout(1, 2, 0, true), tp_layout(1, 4, 0, false), tp_layout(1, 2, 0, true, "selective")}, 10,
                   {"model.attention=full"});
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
  //  gradients (SP only): every replicated tensor once per step, packed into one
  //    all-reduce per unit that holds any (the embeddings, every block, the head).
  for (bool sp : {false, true}) {
    Group g(2);
    comm::accounts().clear();
    const Layout l = tp_layout(1, 2, 0, sp);
    train::Trainer tr(tiny(l, 1), g.comm);
    tr.run();
    const auto& m = tr.deck().model;
    const double N = double(kGlobalBatch) * m.seq, D = m.d_model, L = m.layers, f = sizeof(float), t = 2;
    const double nd = N * D * f, loss = (t * N + 2 * N) * f;
    const double want = sp ? (1 + 10 * L + 1 + 2 + 1) * nd + loss : (1 + 4 * L + 1) * nd + loss;
    const double got = comm::accounts().bytes("tp", comm::Traffic::activations);
    double replicated = 0;
    std::set<int> units;
    const auto& layout = tr.model().layout();
    for (const auto& ts : layout.tensors()) {
      if (!ts.replicated) continue;
      replicated += double(ts.size()) * f;
      for (int u = 0; u < int(layout.units().size()); ++u)
        if (ts.offset >= layout.units()[u].offset && ts.offset < layout.units()[u].offset + layout.units()[u].size)
          units.insert(u);
    }
    const double grads = comm::accounts().bytes("tp", comm::Traffic::grads);
    const auto& tp_axis = comm::accounts().axes().at("tp");
    const auto grad_calls = tp_axis.by_traffic.count("grads") ? tp_axis.by_traffic.at("grads").calls : 0;
    INFO("sp=" << sp);
    CHECK(got == want);
    CHECK(grads == (sp ? replicated : 0.0));
    CHECK(units.size() == std::size_t(L + 2));
    CHECK(grad_calls == (sp ? long(units.size()) : 0L));
    CHECK(world_max(std::abs(got - want)) == 0);
  }
}

TEST_CASE("a padded vocabulary: bytes per axis equal the planner's", "[tp][mpi][vocab]") {
  // d2 x t2 at ZeRO 1 with 257 tokens padded to 512 rows (128*t): the data-parallel
  // gradient and weight traffic carries the padding rows, on both sides.
  Group g(4);
  train::Trainer tr(tiny(tp_layout(2, 2, 1, true), 1, {"model.vocab=257", "model.vocab_pad_to=0"}), g.comm);
  tr.run();
  REQUIRE(tr.model().layout().at("wte").global_shape[0] == 512);
  for (const auto& a : tr.record().traffic) {
    INFO("axis " << a.axis << ": predicted " << a.mean_predicted << ", measured " << a.mean_measured);
    CHECK(world_max(a.worst) == 0);
  }
}

TEST_CASE("activation memory equals the planner's formulas", "[tp][mpi][memory]") {
  // Both attention cores: blockwise (the default: a log-sum-exp per query row, tile
  // buffers) and full (the seq x seq probabilities and their gradient); and a padded
  // vocabulary (the logits of 257 padded to 260 or 512 rows over t = 4).
  for (const char* pad : {"1", "0"}) {
    const Layout l = tp_layout(1, 4, 0, true);
    Group g(4);
    train::Trainer tr(tiny(l, 0, {"model.vocab=257", std::string("model.vocab_pad_to=") + pad}), g.comm);
    const auto want = tr.predicted_activation_memory(), got = tr.measured_activation_memory();
    const auto want_state = tr.predicted_state_memory(), got_state = tr.measured_state_memory();
    INFO("vocab 257, vocab_pad_to=" << pad);
    CHECK(got.activations == want.activations);
    CHECK(got.workspace == want.workspace);
    CHECK(got_state.weights == want_state.weights);
    CHECK(got_state.gradients == want_state.gradients);
    CHECK(got_state.optimizer == want_state.optimizer);
    // The padded rows are allocated: 4 bytes x (rows / t) x d_model for each of the
    // embedding and the head, above the unpadded model.
    CHECK(got_state.weights == 4.0 * double(tr.model().layout().total()));
  }
  for (const char* att : {"blockwise", "full"})
    for (int t : {1, 2, 4})
      for (bool sp : {true, false})
        for (const char* r : {"none", "selective", "full"}) {
          if (t == 1 && !sp) continue;
          const Layout l = tp_layout(1, t, 0, sp, r);
          Group g(t);
          train::Trainer tr(tiny(l, 0, {std::string("model.attention=") + att}), g.comm);
          const auto want = tr.predicted_activation_memory(), got = tr.measured_activation_memory();
          INFO(l.name() << " model.attention=" << att);
          CHECK(got.activations == want.activations);
          CHECK(got.workspace == want.workspace);
          CHECK(got.activations > 0);
        }
}

TEST_CASE("a checkpoint saved at d2 x t2 resumes at t = 1, t = 4 and d = 4", "[tp][mpi][checkpoint]") {
  test::check_reshard(test::input_deck("tiny.yaml"), Layout(), tp_layout(2, 2, 1, true),
                      {"zero0", "t4 zero0", "d4 zero2"}, 6, 3, "tp_reshard");
}

TEST_CASE("a padded checkpoint: vocab 257 saved at t = 2 resumes at t = 1 and 4; saved at t = 1, at t = 2",
          "[tp][mpi][checkpoint][vocab]") {
  // The file holds the 257 model rows whatever the padding (128*t here: 512 rows at
  // t = 2 and 4, 384 at t = 1), so every layout reads the same tensors.
  const std::vector<std::string> vocab = {"model.vocab=257", "model.vocab_pad_to=0"};
  test::check_reshard(test::input_deck("tiny.yaml"), Layout(), tp_layout(1, 2, 0, true),
                      {"zero0", "t4 zero0"}, 6, 3, "tp_reshard_padded", vocab);
  test::check_reshard(test::input_deck("tiny.yaml"), Layout(), Layout(), {"t2 zero0"}, 6, 3, "tp_reshard_padded_t1",
                      vocab);
}
