// SPDX-License-Identifier: BSD-3-Clause
// Softmax cross-entropy fused with its backward: for each row, loss = -log p[target]
// with p = softmax(logits), and the logits are overwritten in place by
// dL/dlogits = (p - onehot(target)) * grad_scale (the caller passes 1 / tokens so the
// gradient is that of the mean loss). Fusing saves a [rows, vocab] buffer, the
// largest activation of a small model.
#pragma once
#include "mini5d/kernels/math.hpp"
#include "mini5d/kernels/views.hpp"

namespace mini5d::kernels {

// Returns the sum (not the mean) of the row losses, accumulated in double.
template <class S>
double cross_entropy_forward_backward(MatU<S> logits, CTokU targets, S grad_scale) {
  const int cols = int(logits.extent(1));
  double total = 0;
  Kokkos::parallel_reduce(
      "mini5d::kernels::cross_entropy", Range(0, logits.extent(0)),
      KOKKOS_LAMBDA(const int r, double& acc) {
        const int tgt = targets(r);
        S mx = logits(r, 0);
        for (int c = 1; c < cols; ++c) mx = logits(r, c) > mx ? logits(r, c) : mx;
        const S z_target = logits(r, tgt) - mx;  // log p[target] = z_target - log(sum)
        S sum = 0;
        for (int c = 0; c < cols; ++c) {
          const S e = kmath::exp_fast(logits(r, c) - mx);
          logits(r, c) = e;
          sum += e;
        }
        const S inv = S(1) / sum;
        acc += double(kmath::log(sum)) - double(z_target);
        for (int c = 0; c < cols; ++c) logits(r, c) = logits(r, c) * inv * grad_scale;
        logits(r, tgt) -= grad_scale;
      },
      total);
  return total;
}

}  // namespace mini5d::kernels
