// SPDX-License-Identifier: BSD-3-Clause
// The three element-wise passes of the vocab-parallel softmax cross-entropy (Megatron),
// on a rank's logits [N, V/t] for every token row; parallel/tp/vocab_cross_entropy.hpp
// puts the tensor group's collectives between them. The logits are overwritten in
// place: by exponentials, then by dL/dlogits = (p - onehot) * grad_scale.
//
// Vocabulary padding (core/vocab_padding.hpp): only a rank's first `valid` columns are
// the model's. The others never enter the maximum or the sums, and are set to zero, so
// they change no loss and get no gradient; a rank that holds padding only contributes
// the lowest number as its maximum and nothing to the sums.
#pragma once
#include <limits>

#include "mini5d/kernels/math.hpp"
#include "mini5d/kernels/profile.hpp"
#include "mini5d/kernels/views.hpp"

namespace mini5d::kernels {

// row_max[r] = the largest of row r's first `valid` local logits.
template <class S>
void vocab_ce_local_max(VecU<S> row_max, CMatU<S> logits, int valid) {
  const int N = int(logits.extent(0)), cols = int(logits.extent(1));
  const S lowest = std::numeric_limits<S>::lowest();
  prof::Scope ps(prof::Family::cross_entropy, double(N) * cols, double(sizeof(S)) * N * cols);
  Kokkos::parallel_for(
      "mini5d::kernels::vocab_ce_local_max", Range(0, N), KOKKOS_LAMBDA(const int r) {
        S mx = lowest;
        for (int c = 0; c < valid; ++c) mx = logits(r, c) > mx ? logits(r, c) : mx;
        row_max(r) = mx;
      });
}

// From every rank's row maxima all_max [parts * N]: the agreed maximum of each row,
// logits <- exp(logit - max), sums[r] = their local sum, sums[N + r] = the target's
// logit - max where this rank holds the target's column (0 elsewhere).
template <class S>
void vocab_ce_local_sums(VecU<S> sums, MatU<S> logits, CVecU<S> all_max, int parts, CTokU targets,
                         int vocab_begin, int valid) {
  const int N = int(logits.extent(0)), cols = int(logits.extent(1));
  prof::Scope ps(prof::Family::cross_entropy, 3.0 * N * cols, 2.0 * double(sizeof(S)) * N * cols);
  Kokkos::parallel_for(
      "mini5d::kernels::vocab_ce_local_sums", Range(0, N), KOKKOS_LAMBDA(const int r) {
        S mx = all_max(r);
        for (int k = 1; k < parts; ++k) mx = all_max(k * N + r) > mx ? all_max(k * N + r) : mx;
        const int tgt = targets(r) - vocab_begin;  // never a padding column
        sums(N + r) = tgt >= 0 && tgt < valid ? logits(r, tgt) - mx : S(0);  // z_target
        S sum = 0;
        for (int c = 0; c < valid; ++c) {
          const S e = kmath::exp_fast(logits(r, c) - mx);
          logits(r, c) = e;
          sum += e;
        }
        for (int c = valid; c < cols; ++c) logits(r, c) = S(0);  // padding: p = 0
        sums(r) = sum;
      });
}

// From the sums over the group: logits <- (p - onehot) * grad_scale (padding columns
// hold 0 and stay 0); returns the summed
// token loss, sum over rows of log(sum) - z_target.
template <class S>
double vocab_ce_grad(MatU<S> logits, CVecU<S> sums, CTokU targets, int vocab_begin, S grad_scale) {
  const int N = int(logits.extent(0)), cols = int(logits.extent(1));
  prof::Scope ps(prof::Family::cross_entropy, 2.0 * N * cols, 2.0 * double(sizeof(S)) * N * cols);
  double total = 0;
  Kokkos::parallel_reduce(
      "mini5d::kernels::vocab_ce_grad", Range(0, N),
      KOKKOS_LAMBDA(const int r, double& acc) {
        const S inv = S(1) / sums(r);
        // log p[target] = z_target - log(sum), with z_target = logit - max.
        acc += double(kmath::log(sums(r))) - double(sums(N + r));
        for (int c = 0; c < cols; ++c) logits(r, c) = logits(r, c) * inv * grad_scale;
        const int tgt = targets(r) - vocab_begin;
        if (tgt >= 0 && tgt < cols) logits(r, tgt) -= grad_scale;
      },
      total);
  return total;
}

}  // namespace mini5d::kernels
