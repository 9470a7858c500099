// SPDX-License-Identifier: BSD-3-Clause
// A layout-independent fingerprint of the parameters: for every logical tensor, the
// sum and the sum of squares of its elements, in double. It is computed from exactly
// the shards a checkpoint save writes (training_state.hpp: every logical element is
// written once over the ranks, whatever the layout), so it equals the checksum of the
// unsharded model for any layout, and an invariance test can compare a layout with one
// rank tensor by tensor. Only the summation order differs between layouts (double:
// ~1e-16 relative).
#pragma once
#include <map>
#include <string>

#include "mini5d/train/trainer.hpp"

namespace mini5d::train {

struct TensorChecksum {
  double sum = 0, sum_sq = 0;
  std::int64_t elements = 0;
};

// Keyed by logical tensor name. Collective over the trainer's whole grid; the same
// result on every rank. Call it between steps (run() leaves the weights settled).
std::map<std::string, TensorChecksum> parameter_checksums(const Trainer& tr);

}  // namespace mini5d::train
