// SPDX-License-Identifier: BSD-3-Clause
// The layout-invariance oracle (docs/architecture.md) shared by the MPI tests: a layout run is
// compared with the single-rank run of the same deck, step by step, on
//   * the loss,
//   * the pre-clip global gradient norm (StepStats::grad_norm): clipping followed by
//     AdamW hides a constant factor on the gradient from the loss, not from the norm;
//   * a checksum of the parameters after the last step, per logical tensor (the sum and
//     the sum of squares, from the shards a checkpoint writes: train/param_checksum.hpp),
//     which sees what the optimizer did to every tensor (weight decay on the wrong
//     shard, a tensor left out of the update).
// Each is reported as the worst relative difference, agreed over the world (or, inside
// on_first_group, over the group that runs) so every rank asserts the same thing. A tensor's sum is compared relative to the
// tensor's L2 norm (sqrt of its sum of squares), since a sum near zero has no relative
// scale of its own: that is the size of a uniform relative error of the elements.
// configs() gives the decks every invariance case runs: the tiny deck as it is (every
// step clipped), and without clipping and with weight decay.
#pragma once
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "mini5d/train/param_checksum.hpp"
#include "mini5d/train/trainer.hpp"
#include "compare.hpp"
#include "mpi_util.hpp"
#include "reference_run.hpp"

namespace mini5d::test {

struct Invariance {
  // Worst relative differences: per-step loss and pre-clip gradient norm; per-tensor
  // parameter sum (relative to the tensor's L2 norm) and sum of squares.
  double loss = 0, grad_norm = 0, sum = 0, sum_sq = 0;
  std::string worst_sum_sq_tensor;  // this rank's tensor with the largest sum-of-squares difference
};

// The bounds an fp32 layout must meet over 10 steps of the tiny deck. Measured for
// d = 2, 4 and ZeRO 0-3 in both configurations: loss <= 1.1e-8, grad norm <= 7.3e-7,
// sum of squares <= 2.4e-7, sum <= 9.1e-4. The sum is the loose one: the attention's
// key bias has an exactly zero gradient (softmax ignores a constant added to a row of
// scores), so its gradient is rounding noise, which AdamW's m / sqrt(v) turns into
// full-size steps of either sign; its sum drifts with the summation order. The sum of
// squares, which weight decay and any scale error move, hardly sees those tiny values.
struct Tolerance {
  double loss = 1e-5, grad_norm = 1e-5, sum = 1e-2, sum_sq = 1e-5;
};
inline bool within(const Invariance& w, const Tolerance& t = {}) {
  return w.loss <= t.loss && w.grad_norm <= t.grad_norm && w.sum <= t.sum && w.sum_sq <= t.sum_sq;
}

struct InvarianceConfig {
  std::string name;
  std::vector<std::string> overrides;  // deck overrides on top of the test's own
};

// The two configurations every invariance case runs.
inline std::vector<InvarianceConfig> configs() {
  return {{"tiny deck", {}}, {"clip off, decay 0.1", {"train.grad_clip=0", "train.weight_decay=0.1"}}};
}

// Every rank of the world calls it, each with the shared single-rank reference
// (reference_run.hpp) and the layout run of its group; collective over the run's grid,
// then over the world. Histories of different lengths or different tensor
// sets count as an infinite difference.
// `skip`: tensors left out of the checksum comparison (named, with the reason, by the
// caller).
inline Invariance compare_runs(const Reference& ref, const train::Trainer& run,
                               const std::vector<std::string>& skip = {}) {
  constexpr double inf = std::numeric_limits<double>::infinity();
  Invariance w;
  const auto& a = ref.history();
  const auto& b = run.record().history;
  if (a.size() != b.size() || a.empty()) {
    w.loss = w.grad_norm = inf;
  } else {
    for (std::size_t i = 0; i < a.size(); ++i) {
      w.loss = worse(w.loss, relative_to(b[i].loss, a[i].loss, std::abs(a[i].loss)));
      w.grad_norm = worse(w.grad_norm, relative_to(b[i].grad_norm, a[i].grad_norm, std::abs(a[i].grad_norm)));
    }
  }
  const auto& want = ref.checksums();
  const auto got = train::parameter_checksums(run);
  if (want.size() != got.size() || want.empty()) w.sum = w.sum_sq = inf;
  for (const auto& [name, c] : want) {
    if (std::find(skip.begin(), skip.end(), name) != skip.end()) continue;
    const auto g = got.find(name);
    if (g == got.end() || g->second.elements != c.elements) {
      w.sum = w.sum_sq = inf;
      continue;
    }
    const double l2 = std::sqrt(c.sum_sq);
    w.sum = worse(w.sum, relative_to(g->second.sum, c.sum, l2));
    const double sq = relative_to(g->second.sum_sq, c.sum_sq, c.sum_sq);
    if (!(sq <= w.sum_sq)) w.worst_sum_sq_tensor = name;
    w.sum_sq = worse(w.sum_sq, sq);
  }
  // NaN-safe max over the world: a non-finite difference stays infinite.
  for (double* v : {&w.loss, &w.grad_norm, &w.sum, &w.sum_sq}) *v = world_max(std::isnan(*v) ? inf : *v);
  return w;
}

}  // namespace mini5d::test
