// SPDX-License-Identifier: BSD-3-Clause
// A layout-independent fingerprint of the parameters: for every logical tensor, the
// sum and the sum of squares of its elements, and their sum weighted by position,
// sum_i (i + 1) x_i over the tensor's row-major logical index i, in double. The sums
// alone keep any permutation of a tensor's elements (a transposed shard, rows read back
// in another order); the weighted sum does not. It is computed from exactly the shards
// a checkpoint save writes (training_state.hpp: every logical element is written once
// over the ranks, whatever the layout), so it equals the checksum of the unsharded
// model for any layout, and an invariance test can compare a layout with one rank
// tensor by tensor. Only the summation order differs between layouts (double:
// ~1e-16 relative). state_checksums does the same for the AdamW moments too.
#pragma once
#include <map>
#include <string>

#include "mini5d/train/trainer.hpp"

namespace mini5d::train {

struct TensorChecksum {
  double sum = 0, sum_sq = 0;
  double weighted = 0;  // sum_i (i + 1) x_i, i the logical row-major index
  std::int64_t elements = 0;
};

// Keyed by logical tensor name. Collective over the trainer's whole grid; the same
// result on every rank. Call it between steps (run() leaves the weights settled).
std::map<std::string, TensorChecksum> parameter_checksums(const Trainer& tr);

// Every part a checkpoint writes: the weights and both AdamW moments, keyed by part
// and tensor ("model", "optimizer/exp_avg", "optimizer/exp_avg_sq"; then the logical
// tensor name). Collective as parameter_checksums.
std::map<std::string, std::map<std::string, TensorChecksum>> state_checksums(const Trainer& tr);

}  // namespace mini5d::train
