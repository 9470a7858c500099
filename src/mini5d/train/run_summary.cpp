// SPDX-License-Identifier: BSD-3-Clause
// The end of a run, gathered over the ranks: each phase's min / mean / max, every
// rank's memory peaks and ring attention's work per rank (collective over the job).
#include <algorithm>

#include "mini5d/train/trainer.hpp"

namespace mini5d::train {

void Trainer::summarise_ranks() {
  // Min / mean / max of each phase over the ranks: a slow rank shows up here.
  double mine[5] = {record_.phases.data, record_.phases.forward, record_.phases.backward, record_.phases.reduce, record_.phases.optimizer};
  double lo[5], hi[5], sum[5];
  std::copy(mine, mine + 5, lo);
  std::copy(mine, mine + 5, hi);
  std::copy(mine, mine + 5, sum);
  comms_->world().allreduce_host(lo, 5, comm::Communicator::Op::min);
  comms_->world().allreduce_host(hi, 5, comm::Communicator::Op::max);
  comms_->world().allreduce_host(sum, 5, comm::Communicator::Op::sum);
  auto as_phases = [](const double* v, double scale) {
    return PhaseTimes{v[0] * scale, v[1] * scale, v[2] * scale, v[3] * scale, v[4] * scale};
  };
  record_.spread = {as_phases(lo, 1.0), as_phases(sum, 1.0 / grid_->size()), as_phases(hi, 1.0)};
  // Every rank's memory peaks (ranks of one ZeRO group differ when a unit does not
  // divide evenly; later axes make stages differ more).
  std::vector<double> mine_peaks(mem::kCategories), all(std::size_t(mem::kCategories) * grid_->size());
  for (int c = 0; c < mem::kCategories; ++c) mine_peaks[c] = double(mem::ledger().of(mem::Category(c)).peak);
  comms_->world().allgather_host(mine_peaks.data(), mem::kCategories, all.data());
  record_.peaks.assign(grid_->size(), {});
  for (int r = 0; r < grid_->size(); ++r)
    record_.peaks[r].assign(all.begin() + r * mem::kCategories, all.begin() + (r + 1) * mem::kCategories);
  // Ring attention's work per rank: the balance zig-zag buys (and contiguous loses).
  if (const auto* ring = model_ ? model_->ring() : nullptr) {
    const auto& rs = ring->stats();
    const double mine_ring[2] = {rs.forward_calls ? double(rs.forward_blocks) / double(rs.forward_calls) : 0.0,
                                 rs.compute_seconds};
    std::vector<double> every(2 * std::size_t(grid_->size()));
    comms_->world().allgather_host(mine_ring, 2, every.data());
    record_.ring.assign(grid_->size(), {});
    for (int r = 0; r < grid_->size(); ++r) record_.ring[r] = {every[2 * r], every[2 * r + 1]};
  }
}

}  // namespace mini5d::train
