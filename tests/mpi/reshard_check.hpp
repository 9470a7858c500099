// SPDX-License-Identifier: BSD-3-Clause
// The resharding case the axis tests share, with the oracle of reshard.hpp: a checkpoint
// saved in one layout resumes in others, each reading back the saving run's state
// exactly (weights and AdamW moments, state_compare.hpp), the single-rank run's at the
// cut within round-off, and then training the remaining steps with its losses.
#pragma once
#include <catch2/catch.hpp>
#include <cstdio>
#include <string>
#include <vector>

#include "layouts.hpp"
#include "reference_run.hpp"
#include "reshard.hpp"

namespace mini5d::test {

// The runs train the deck at `deck` (layout_deck); `one` is the single-rank layout the
// others are compared with (the same depth and micro-batches). The first saved.ranks()
// ranks save after `cut` of `steps` steps, in folder `name` under the working directory;
// then each layout of `resumed` resumes on groups of its rank count. Checked per
// logical tensor of the weights and of both AdamW moments (state_compare.hpp), the state
// read back must be the saving run's, sums of squares and position-weighted sums within
// 1e-10 (the same floats, summed in another order; measured <= 3e-14), and the
// single-rank run's at the cut, sums of squares within 1e-5; then the losses of the
// remaining steps the single-rank run's within 1e-5, the layout-invariance bound. The
// weighted sums are not compared with the single-rank run's: the key bias, whose exact
// gradient is zero, takes AdamW steps of rounding noise that differ in every layout
// (invariance.hpp), which moves its tensor's weighted sum by up to 1.5e-5 of its
// scale. `extra`: deck overrides for every run. Collective over the world.
inline void check_reshard(const std::string& deck, const Layout& one,
                          const Layout& saved, const std::vector<Layout>& resumed, long steps, long cut,
                          const std::string& name, const std::vector<std::string>& extra = {}) {
  const std::string base = fresh_dir(name);
  // The single-rank runs on world rank 0 only, their figures shared (reference_run.hpp).
  const Reference straight = Reference::run(layout_deck(deck, one, steps, extra));
  StateChecksums one_state;
  if (world_rank() == 0) one_state = state_at_cut(layout_deck(deck, one, steps, extra), cut);
  one_state = broadcast_state(one_state, 0);
  const std::string saved_dir = base + "/saved";
  const StateChecksums saved_state =
      save_state_at_cut(with_checkpoint_dir(layout_deck(deck, saved, steps, extra), saved_dir), saved.ranks(), cut);
  for (const Layout& l : resumed) {
    Group g(l.ranks());
    const std::string dir = copy_for_group(saved_dir, base, l.name(), g, l.ranks());
    train::Trainer tr(with_checkpoint_dir(layout_deck(deck, l, steps, extra), dir), g.comm);
    tr.resume("latest");
    INFO("saved at " << saved.name() << ", resumed at " << l.name());
    // The logical tensors read back are the saved and the single-rank ones, whatever the layout.
    const StateChecksums read = train::state_checksums(tr);
    auto at = [](const std::string& where) { return where.empty() ? "all equal" : where.c_str(); };
    const StateDifference exact = state_difference(saved_state, read), near = state_difference(one_state, read);
    const double exact_sq = world_max(exact.sum_sq), exact_w = world_max(exact.weighted),
                 near_sq = world_max(near.sum_sq);
    if (world_rank() == 0)
      std::printf("saved at %s, resumed at %s: state read back against the saved run's: sums of squares %.3g, "
                  "weighted sums %.3g (%s); against one rank's: sums of squares %.3g (%s)\n",
                  saved.name().c_str(), l.name().c_str(), exact_sq, exact_w, at(exact.weighted_at), near_sq,
                  at(near.sum_sq_at));
    CHECK(exact_sq <= 1e-10);
    CHECK(exact_w <= 1e-10);
    CHECK(near_sq <= 1e-5);
    tr.run();
    const double worst = world_max(resumed_loss_difference(straight.history(), tr, cut));
    CHECK(worst <= 1e-5);
    if (world_rank() == 0)
      std::printf("saved at %s, resumed at %s: worst relative loss difference %.3g\n", saved.name().c_str(),
                  l.name().c_str(), worst);
  }
}

}  // namespace mini5d::test
