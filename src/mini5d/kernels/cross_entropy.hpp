// SPDX-License-Identifier: BSD-3-Clause
// Softmax cross-entropy fused with its backward: for each row, loss = -log p[target]
// with p = softmax(logits), and the logits are overwritten in place by
// dL/dlogits = (p - onehot(target)) * grad_scale (the caller passes 1 / tokens so the
// gradient is that of the mean loss). Fusing saves a [rows, vocab] buffer, the
// largest activation of a small model. With bf16 logits the row statistics and the
// gradient are computed in fp32 and the gradient is rounded once as it is stored.
//
// A team per row: the row maximum and the sum of exponentials are team reductions that
// only read, and the one pass that writes recomputes the exponential (cheaper than
// writing it and reading it back, and no thread overwrites a logit another thread of
// the team still has to read).
#pragma once
#include "mini5d/kernels/bf16.hpp"
#include "mini5d/kernels/math.hpp"
#include "mini5d/kernels/profile.hpp"
#include "mini5d/kernels/team_reduce.hpp"
#include "mini5d/kernels/views.hpp"

namespace mini5d::kernels {

// Returns the sum (not the mean) of the row losses, accumulated in double. Only the
// first `valid` columns are the model's (all when negative): the rest are vocabulary
// padding (rules/vocab_padding.hpp), left out of the softmax, their gradient set to 0.
template <class S>
double cross_entropy_forward_backward(MatU<S> logits, CTokU targets, acc_t<S> grad_scale, int valid = -1) {
  using A = acc_t<S>;  // bf16 logits: the softmax, its sums and the gradient in fp32
  const int rows = int(logits.extent(0)), all = int(logits.extent(1));
  const int cols = valid < 0 ? all : valid;
  prof::Scope ps(prof::Family::cross_entropy, 12.0 * rows * cols, double(sizeof(S)) * 4.0 * rows * cols);
  double total = 0;
  Kokkos::parallel_reduce(
      "mini5d::kernels::cross_entropy", teams(rows),
      KOKKOS_LAMBDA(const TeamMember& t, double& acc) {
        const int r = t.league_rank();
        const int tgt = targets(r);
        const A mx = team_max<A>(t, cols, [&](const int c) { return ld(logits(r, c)); });
        const A z_target = ld(logits(r, tgt)) - mx;  // log p[target] = z_target - log(sum)
        const A sum = team_sum<A>(t, cols, [&](const int c) { return kmath::exp_fast(ld(logits(r, c)) - mx); });
        const A scale = grad_scale / sum;
        // Every thread has read what it needs (the reductions end with the team in step).
        team_for(t, 0, all, [&](const int c) {
          logits(r, c) = st<S>(c < cols ? kmath::exp_fast(ld(logits(r, c)) - mx) * scale - (c == tgt ? grad_scale : A(0))
                                        : A(0));
        });
        Kokkos::single(Kokkos::PerTeam(t), [&]() { acc += double(kmath::log(sum)) - double(z_target); });
      },
      total);
  return total;
}

}  // namespace mini5d::kernels
