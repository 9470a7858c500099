// SPDX-License-Identifier: BSD-3-Clause
// Softmax cross-entropy fused with its backward: for each row, loss = -log p[target]
// with p = softmax(logits), and the logits are overwritten in place by
// dL/dlogits = (p - onehot(target)) * grad_scale (the caller passes 1 / tokens so the
// gradient is that of the mean loss). Fusing saves a [rows, vocab] buffer, the
// largest activation of a small model.
//
// A team per row: the row maximum and the sum of exponentials are team reductions that
// only read, and the one pass that writes recomputes the exponential (cheaper than
// writing it and reading it back, and no thread overwrites a logit another thread of
// the team still has to read).
#pragma once
#include "mini5d/kernels/math.hpp"
#include "mini5d/kernels/profile.hpp"
#include "mini5d/kernels/team_reduce.hpp"
#include "mini5d/kernels/views.hpp"

namespace mini5d::kernels {

// Returns the sum (not the mean) of the row losses, accumulated in double. Only the
// first `valid` columns are the model's (all when negative): the rest are vocabulary
// padding (core/vocab_padding.hpp), left out of the softmax, their gradient set to 0.
template <class S>
double cross_entropy_forward_backward(MatU<S> logits, CTokU targets, S grad_scale, int valid = -1) {
  const int rows = int(logits.extent(0)), all = int(logits.extent(1));
  const int cols = valid < 0 ? all : valid;
  prof::Scope ps(prof::Family::cross_entropy, 12.0 * rows * cols, double(sizeof(S)) * 4.0 * rows * cols);
  double total = 0;
  Kokkos::parallel_reduce(
      "mini5d::kernels::cross_entropy", teams(rows),
      KOKKOS_LAMBDA(const TeamMember& t, double& acc) {
        const int r = t.league_rank();
        const int tgt = targets(r);
        const S mx = team_max<S>(t, cols, [&](const int c) { return logits(r, c); });
        const S z_target = logits(r, tgt) - mx;  // log p[target] = z_target - log(sum)
        const S sum = team_sum<S>(t, cols, [&](const int c) { return kmath::exp_fast(logits(r, c) - mx); });
        const S scale = grad_scale / sum;
        // Every thread has read what it needs (the reductions end with the team in step).
        team_for(t, 0, all, [&](const int c) {
          logits(r, c) = c < cols ? kmath::exp_fast(logits(r, c) - mx) * scale - (c == tgt ? grad_scale : S(0)) : S(0);
        });
        Kokkos::single(Kokkos::PerTeam(t), [&]() { acc += double(kmath::log(sum)) - double(z_target); });
      },
      total);
  return total;
}

}  // namespace mini5d::kernels
