// SPDX-License-Identifier: BSD-3-Clause
// Each rank's expert-parallel bytes per step from the routing it did. Per MoE layer and
// micro-batch a rank sends its S routed rows and receives R rows (the counts it
// exchanged): dispatch S and combine R forward, the same again backward, (2 S + 2 R)
// rows of d_model fp32 elements. The planner predicts only their mean over the ranks
// (a rank's R follows the router), and a mean keeps a rank that moves rows too many
// while another moves as many too few; this is each rank's own figure.
#pragma once
#include <cmath>

#include "mini5d/train/trainer.hpp"
#include "compare.hpp"

namespace mini5d::test {

// Call add() after every step (run()'s on_step). A layer keeps only its last routing,
// which is the step's when a step is one micro-batch (p = 1, accumulation 1); any other
// run with experts makes the figure NaN, which no check accepts.
struct RoutedBytes {
  double total = 0;
  long steps = 0;
  bool one_micro_batch = true;
  void add(const train::Trainer& tr) {
    const Deck& d = tr.deck();
    double rows = 0;
    bool moe = false;
    for (int b = 0; b < tr.model().config().layers / d.parallel.p; ++b)
      if (const auto* m = tr.model().block(b).moe()) {
        moe = true;
        rows += m->send_plan().rows + m->receive_plan().rows;
      }
    if (moe && (d.parallel.p != 1 || d.train.accumulation != 1)) one_micro_batch = false;
    total += 2 * rows * d.model.d_model * sizeof(float);
    ++steps;
  }
  double per_step() const { return one_micro_batch && steps > 0 ? total / double(steps) : NAN; }
};

// This rank's `e` bytes per step in tr's last run against `routed`, relative (exact
// when equal; +inf when either is not finite, or bytes moved that no routing implies).
inline double ep_rank_difference(const train::Trainer& tr, const RoutedBytes& routed) {
  for (const auto& a : tr.record().traffic)
    if (a.axis == "e") return relative_to(a.measured, routed.per_step(), routed.per_step());
  return kNotFinite;
}

}  // namespace mini5d::test
