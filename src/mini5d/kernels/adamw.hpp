// SPDX-License-Identifier: BSD-3-Clause
// The AdamW update kernel (optim/adamw.hpp owns the moments and the piece table): one
// launch over every segment of a flat buffer, a team per piece of consecutive elements.
// The gradient is read times a factor, so global-norm clipping costs no pass of its own.
#pragma once
#include <cstdint>
#include <type_traits>

#include "mini5d/kernels/math.hpp"
#include "mini5d/kernels/profile.hpp"
#include "mini5d/kernels/views.hpp"

namespace mini5d::kernels {

// One row of the device table: a run of at most `piece` elements of one segment, and
// where it starts in the parameter, gradient and moment buffers.
struct AdamWPiece {
  std::int64_t param_offset, grad_offset, state_offset, size;
  int decay;
};

// The per-step constants, bias corrections folded in (the per-element work is fp32:
// double per element made the update a tenth of a small model's step).
struct AdamWStep {
  float beta1, beta2;
  float step_size;    // lr / (1 - beta1^step)
  float inv_sqrt_c2;  // 1 / sqrt(1 - beta2^step)
  float eps;
  float decay;        // lr * weight_decay, on segments that decay
  double grad_factor;  // the gradient is used times this (the clipping factor, or 1)
};

template <class S>
void adamw_update(Kokkos::View<const AdamWPiece*, MemSpace> pieces, std::int64_t longest, VecU<S> params,
                  CVecU<S> grads, VecU<float> m, VecU<float> v, const AdamWStep k) {
  if (pieces.extent(0) == 0) return;
  // Per element: reads p, g, m, v and writes p, m, v (moments fp32).
  const double n = double(m.extent(0));
  prof::Scope ps(prof::Family::optimizer, 12.0 * n, n * (2.0 * sizeof(S) + sizeof(S) + 4.0 * sizeof(float)));
  // On a host backend a team is one thread and the inner loop a plain (vectorisable)
  // loop over the piece (unless a test fixed the team size: views.hpp).
  const int team = fixed_team_size() > 0 ? fixed_team_size()
                   : std::is_same<ExecSpace, Kokkos::DefaultHostExecutionSpace>::value
                       ? 1
                       : int(longest < 256 ? longest : 256);
  Kokkos::parallel_for(
      "mini5d::kernels::adamw", Team(int(pieces.extent(0)), team), KOKKOS_LAMBDA(const TeamMember& t) {
        const AdamWPiece pc = pieces(t.league_rank());
        const float decay = pc.decay ? k.decay : 0.0f;
        S* p = params.data() + pc.param_offset;
        const S* g = grads.data() + pc.grad_offset;
        float* m1s = m.data() + pc.state_offset;
        float* v1s = v.data() + pc.state_offset;
        Kokkos::parallel_for(Kokkos::TeamThreadRange(t, pc.size), [&](const std::int64_t j) {
          // (g * f rounded to S, as a separate clipping pass would have stored it)
          const float gj = float(S(g[j] * S(k.grad_factor)));
          const float m1 = k.beta1 * m1s[j] + (1.0f - k.beta1) * gj;
          const float v1 = k.beta2 * v1s[j] + (1.0f - k.beta2) * gj * gj;
          m1s[j] = m1;
          v1s[j] = v1;
          // p -= lr * (mhat / (sqrt(vhat) + eps) + wd * p), mhat = m / c1, vhat = v / c2
          const S pj = p[j];
          p[j] = pj - S(k.step_size * m1 / (kmath::sqrt(v1) * k.inv_sqrt_c2 + k.eps)) - S(decay) * pj;
        });
      });
}

}  // namespace mini5d::kernels
