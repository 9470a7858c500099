// SPDX-License-Identifier: BSD-3-Clause
// The checkpoint-resharding oracle (docs/checkpoints.md) shared by the axis tests: a
// checkpoint saved in one layout after `cut` steps is resumed in others, and
//   * the parameters read back equal the single-rank run's at the cut (per logical
//     tensor, the sum of squares of train/param_checksum.hpp): the file holds the
//     logical tensors whatever layout wrote or reads it;
//   * the whole state read back (weights and both AdamW moments) is the saving
//     layout's, exactly, and the single-rank run's within round-off
//     (state_compare.hpp: sums of squares and position-weighted sums);
//   * the losses of the remaining steps equal the uninterrupted single-rank run's.
// The pieces are separate functions because the tests arrange their groups
// differently (all ranks in groups, or a few working while the rest idle).
#pragma once
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "mini5d/core/deck.hpp"
#include "mini5d/train/param_checksum.hpp"
#include "mini5d/train/trainer.hpp"
#include "compare.hpp"
#include "mpi_util.hpp"
#include "state_compare.hpp"

namespace mini5d::test {

// An empty folder under the working directory, agreed by every rank (collective).
inline std::string fresh_dir(const std::string& name) {
  const std::string dir = (std::filesystem::current_path() / name).string();
  if (world_rank() == 0) std::filesystem::remove_all(dir);
  MPI_Barrier(MPI_COMM_WORLD);
  return dir;
}

// The deck with its checkpoints in `dir`, every one kept.
inline Deck with_checkpoint_dir(Deck d, const std::string& dir) {
  d.checkpoint.dir = dir;
  d.checkpoint.keep = 0;
  return d;
}

// The parameters of the single-rank run of `deck` after `cut` steps: what every layout
// must read back from a checkpoint saved at the cut.
inline std::map<std::string, train::TensorChecksum> checksums_at_cut(const Deck& deck, long cut) {
  train::Trainer one(deck, MPI_COMM_SELF);
  one.run({}, {}, cut);
  return train::parameter_checksums(one);
}

// The weights and both AdamW moments of the single-rank run of `deck` after `cut` steps.
inline StateChecksums state_at_cut(const Deck& deck, long cut) {
  train::Trainer one(deck, MPI_COMM_SELF);
  one.run({}, {}, cut);
  return train::state_checksums(one);
}

// As save_at_cut, and returns on every rank the state the saving run held (and wrote).
inline StateChecksums save_state_at_cut(const Deck& deck, int ranks, long cut) {
  StateChecksums saved;
  {
    Group g(ranks);
    if (g.index == 0) {
      train::Trainer first(deck, g.comm);
      first.run({}, {}, cut);
      first.save("test");
      saved = train::state_checksums(first);  // collective over the group
    }
  }
  return broadcast_state(saved, 0);  // the other groups sleep while the first saves
}

// The first `ranks` ranks run `cut` steps of `deck` and save a checkpoint in its
// checkpoint folder; the other ranks wait (collective over the world).
inline void save_at_cut(const Deck& deck, int ranks, long cut) {
  {
    Group g(ranks);
    if (g.index == 0) {
      train::Trainer first(deck, g.comm);
      first.run({}, {}, cut);
      first.save("test");
    }
  }
  idle_barrier();  // the other groups sleep while the first saves
}

// Gives each group of `ranks` its own copy of the saved checkpoint folder (a folder
// belongs to one run: its lock and `latest` are per run); collective over the world.
// Returns the copy's path for the calling rank's group.
inline std::string copy_for_group(const std::string& saved, const std::string& base, const std::string& tag,
                                  const Group& g, int ranks) {
  std::string dir = base + "/" + tag + "_" + std::to_string(g.index);
  std::replace(dir.begin(), dir.end(), ' ', '_');
  if (g.index * ranks == world_rank()) std::filesystem::copy(saved, dir, std::filesystem::copy_options::recursive);
  MPI_Barrier(MPI_COMM_WORLD);
  return dir;
}

// Worst relative difference of the resumed run's losses from the uninterrupted run's
// (`want`, its history) steps cut.. (local to the rank; infinite when the resumed run did
// not run them all).
inline double resumed_loss_difference(const std::vector<train::StepStats>& want, const train::Trainer& resumed,
                                      long cut) {
  const auto& got = resumed.record().history;
  if (cut < 0 || want.size() != got.size() + std::size_t(cut) || got.empty()) return HUGE_VAL;
  double worst = 0;
  for (std::size_t s = 0; s < got.size(); ++s) {
    const double w = want[s + std::size_t(cut)].loss;
    worst = worse(worst, relative_to(got[s].loss, w, w));
  }
  return worst;
}

// Worst relative difference of the sums of squares of the parameters `tr` holds from
// `want` (the single-rank run at the cut); infinite when a tensor is missing or extra.
inline double checksum_difference(const std::map<std::string, train::TensorChecksum>& want,
                                  const train::Trainer& tr) {
  const auto got = train::parameter_checksums(tr);
  if (got.size() != want.size() || want.empty()) return HUGE_VAL;
  double worst = 0;
  for (const auto& [name, c] : want) {
    const auto g = got.find(name);
    if (g == got.end()) return HUGE_VAL;
    worst = worse(worst, relative_to(g->second.sum_sq, c.sum_sq, c.sum_sq));
  }
  return worst;
}

}  // namespace mini5d::test
