// SPDX-License-Identifier: BSD-3-Clause
// The resharding case the axis tests share, with the oracle of reshard.hpp: a checkpoint
// saved in one layout resumes in others, each reading back the single-rank run's
// parameters at the cut and then training the remaining steps with its losses.
#pragma once
#include <catch2/catch.hpp>
#include <cstdio>
#include <string>
#include <vector>

#include "layouts.hpp"
#include "reshard.hpp"

namespace mini5d::test {

// The runs train the deck at `deck` (layout_deck); `one` is the single-rank layout the
// others are compared with (the same depth and micro-batches). The first saved.ranks() ranks save
// after `cut` of `steps` steps, in folder `name` under the working directory; then each
// layout of `resumed` resumes on groups of its rank count. Both differences must stay
// within 1e-5, the layout-invariance bound of the losses. `extra`: deck overrides for
// every run. Collective over the world.
inline void check_reshard(const std::string& deck, const Layout& one,
                          const Layout& saved, const std::vector<Layout>& resumed, long steps, long cut,
                          const std::string& name, const std::vector<std::string>& extra = {}) {
  const std::string base = fresh_dir(name);
  train::Trainer straight(layout_deck(deck, one, steps, extra), MPI_COMM_SELF);
  straight.run();
  const auto want_sums = checksums_at_cut(layout_deck(deck, one, steps, extra), cut);
  const std::string saved_dir = base + "/saved";
  save_at_cut(with_checkpoint_dir(layout_deck(deck, saved, steps, extra), saved_dir), saved.ranks(), cut);
  for (const Layout& l : resumed) {
    Group g(l.ranks());
    const std::string dir = copy_for_group(saved_dir, base, l.name(), g, l.ranks());
    train::Trainer tr(with_checkpoint_dir(layout_deck(deck, l, steps, extra), dir), g.comm);
    tr.resume("latest");
    INFO("saved at " << saved.name() << ", resumed at " << l.name());
    // The logical tensors read back are the single-rank ones, whatever the layout.
    CHECK(world_max(checksum_difference(want_sums, tr)) <= 1e-5);
    tr.run();
    const double worst = world_max(resumed_loss_difference(straight, tr, cut));
    CHECK(worst <= 1e-5);
    if (world_rank() == 0)
      std::printf("saved at %s, resumed at %s: worst relative loss difference %.3g\n", saved.name().c_str(),
                  l.name().c_str(), worst);
  }
}

}  // namespace mini5d::test
